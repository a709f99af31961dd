// `minimesh viz dashboard`: the web dashboard on localhost, as `linkerd viz dashboard`. It keeps the
// connection open until Ctrl-C (or the close it hands to env.onDashboard).
import { UsageError, type FlagSpecs } from '@minimesh/runtime';
import { VizError } from '../errors.js';
import { COMMON, connectDeps, interrupted, PROM, vizSubcommand } from './common.js';

const info = {
  name: 'minimesh viz dashboard',
  summary: 'serve the viz dashboard on localhost: namespaces, golden metrics, the edge graph, live requests',
  usage: 'minimesh viz dashboard [--port 50750]',
};

const FLAGS = {
  ...COMMON,
  ...PROM,
  port: { type: 'string', default: '50750', description: 'local port of the dashboard (0: any free port)' },
  address: {
    type: 'string',
    default: '127.0.0.1',
    description: 'local address (the dashboard has no login: keep it on loopback)',
  },
} as const satisfies FlagSpecs;

export const dashboardCommand = vizSubcommand({
  info,
  summary: 'the web dashboard on localhost',
  flags: FLAGS,
  async run({ values: f, positionals }, io, env) {
    if (positionals.length > 0) throw new UsageError(`${info.name}: takes no arguments (got ${positionals.join(' ')})`);
    const port = Number(f.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new UsageError(`${info.name}: --port ${f.port} is not valid: expected 0 to 65535`);
    const { conn, deps, config } = await connectDeps(env, f);
    // Fail now, in one line, when viz is not installed, rather than in the page.
    if (!f['prometheus-url']) await config();
    const { createDashboard } = await import('../dashboard/server.js');
    const app = await createDashboard({
      deps,
      tapUrl: async () => (await config()).tapUrl,
      context: `${conn.server}${f.context ? ` (${f.context})` : ''}`,
      defaultNamespace: f.namespace || conn.namespace || 'default',
    });
    let url: string;
    try {
      url = await app.listen({ host: f.address, port });
    } catch (err) {
      await conn.close?.();
      throw new VizError('MINIMESH_VIZ_BAD_INPUT', `cannot listen on ${f.address}:${port}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    io.stdout.write(`minimesh viz dashboard available at:\n${url}\nPress Ctrl-C to stop.\n`);
    const close = async () => {
      await app.close();
      await conn.close?.();
    };
    env.onDashboard?.(url, close);
    const signal = interrupted(env);
    await new Promise<void>((resolve) =>
      signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    await close();
    return 0;
  },
});
