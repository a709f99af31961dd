// `minimesh diagnostics proxy-metrics <ns>/<pod>`: a proxy's raw /metrics through the API server's pod
// proxy (no exec, no port-forward), as `linkerd diagnostics proxy-metrics`.
import { UsageError, type FlagSpecs } from '@minimesh/runtime';
import { getProxyMetrics } from '../api.js';
import { COMMON, parseCommand, type CommandIO, type VizEnv } from './common.js';

const info = {
  name: 'minimesh diagnostics proxy-metrics',
  summary: "a proxy's raw Prometheus metrics, read through the API server's pod proxy",
  usage: 'minimesh diagnostics proxy-metrics <namespace>/<pod> | -n <namespace> <pod>',
};

const FLAGS = {
  namespace: COMMON.namespace,
  kubeconfig: COMMON.kubeconfig,
  context: COMMON.context,
  port: { type: 'string', default: '4191', description: "the proxy's admin port" },
} as const satisfies FlagSpecs;

export async function diagnosticsCommand(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(
      "minimesh diagnostics — what a proxy knows\n\nUsage: minimesh diagnostics <command> [flags]\n\nCommands:\n  proxy-metrics   a proxy's raw Prometheus metrics, through the API server (no exec, no port-forward)\n",
    );
    return name === undefined ? 2 : 0;
  }
  if (name !== 'proxy-metrics') throw new UsageError(`unknown diagnostics command "${name}": expected proxy-metrics`);
  const parsed = parseCommand(info, FLAGS, rest, io);
  if (!parsed) return 0;
  const f = parsed.values;
  const arg = parsed.positionals[0];
  if (parsed.positionals.length !== 1 || !arg)
    throw new UsageError(`${info.name}: expected one pod as <namespace>/<pod> (or -n <namespace> <pod>)`);
  const port = Number(f.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new UsageError(`${info.name}: --port ${f.port} is not valid: expected 1 to 65535`);
  const conn = await env.connect({ kubeconfig: f.kubeconfig, context: f.context });
  try {
    // <namespace>/<pod>, or -n <namespace> with <pod> or po/<pod> (kubectl's form).
    const m = /^(?:po|pod|pods)\/(.+)$/.exec(arg);
    const slash = arg.indexOf('/');
    const fallback = f.namespace || conn.namespace || 'default';
    const [ns, podName] = m
      ? [fallback, m[1] ?? '']
      : slash === -1
        ? [fallback, arg]
        : [arg.slice(0, slash), arg.slice(slash + 1)];
    if (ns === '' || podName === '' || podName.includes('/'))
      throw new UsageError(`${info.name}: "${arg}" is not <namespace>/<pod>`);
    io.stdout.write(await getProxyMetrics(conn.kube, ns, podName, port));
    return 0;
  } finally {
    await conn.close?.();
  }
}
