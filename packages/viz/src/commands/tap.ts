// `minimesh viz tap`: live requests of a workload, one line each, through the tap service, as
// `linkerd viz tap`. Its flags and request are the base of `viz top`.
import { renderRecord, UsageError, type FlagSpecs } from '@minimesh/runtime';
import { streamTap, type TapRequest } from '../api.js';
import type { Resource } from '../resource.js';
import { formatTapLine } from '../tap-record.js';
import {
  COMMON,
  FILTERS,
  interrupted,
  optionalResource,
  output,
  resourceArg,
  vizSubcommand,
  withConnection,
  type Connected,
} from './common.js';

const info = {
  name: 'minimesh viz tap',
  summary: 'live requests of a workload: method, path, status, latency, identities',
  usage: 'minimesh viz tap <kind>/<name> [-n NS] [--to R] [--method M] [--path P] [--limit N] [-o wide|json|yaml]',
};

export const TAP_FLAGS = {
  ...COMMON,
  ...FILTERS,
  limit: { type: 'string', default: '100', description: 'requests each proxy reports before the tap ends' },
  output: {
    type: 'string',
    short: 'o',
    default: '',
    description:
      'table (one line per request), wide (with resources), json (one object per line) or yaml (one document each)',
  },
} as const satisfies FlagSpecs;

/** The tap request the filter flags describe. */
export function tapRequest(
  f: {
    namespace: string;
    to: string;
    'to-namespace': string;
    method: string;
    path: string;
    authority: string;
    limit: string;
  },
  resource: Resource,
  ns: string,
  command: string,
): TapRequest {
  const limit = Number(f.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new UsageError(`${command}: --limit ${f.limit} is not valid: expected a whole number of at least 1`);
  if (f.path && !f.path.startsWith('/'))
    throw new UsageError(`${command}: --path "${f.path}" is not valid: expected a path prefix starting with "/"`);
  const to = optionalResource(f.to, f['to-namespace'] || ns, 'to');
  return {
    resource: { ...resource, namespace: ns },
    namespace: ns,
    limit,
    ...(to ? { to } : {}),
    ...(f.method ? { method: f.method } : {}),
    ...(f.path ? { path: f.path } : {}),
    ...(f.authority ? { authority: f.authority } : {}),
  };
}

/** The tap the flags describe, on the resource, over the connection; resolves with its namespace once it ends. */
export async function runTap(
  { conn, config }: Connected,
  f: Parameters<typeof tapRequest>[0],
  resource: Resource,
  command: string,
  handlers: Parameters<typeof streamTap>[3],
  signal: AbortSignal,
): Promise<string> {
  const ns = f.namespace || conn.namespace || 'default';
  const req = tapRequest(f, resource, ns, command);
  const { tapUrl } = await config();
  await streamTap(conn.kube, tapUrl, req, handlers, signal);
  return ns;
}

export const tapCommand = vizSubcommand({
  info,
  summary: 'live requests, one line each',
  flags: TAP_FLAGS,
  async run({ values: f, positionals }, io, env) {
    const resource = resourceArg(positionals, info.name, { needName: true });
    const out = output(f.output, ['table', 'wide', 'json', 'yaml'], info.name);
    return withConnection(env, f, async (connected) => {
      await runTap(
        connected,
        f,
        resource,
        info.name,
        {
          onRecord: (r) =>
            io.stdout.write(
              out === 'json' || out === 'yaml'
                ? renderRecord(out, r)
                : `${formatTapLine(r, { wide: out === 'wide' })}\n`,
            ),
          onWarning: (m) => io.stderr.write(`${m}\n`),
        },
        interrupted(env),
      );
      return 0;
    });
  },
});
