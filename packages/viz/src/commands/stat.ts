// `minimesh viz stat`: golden metrics of workloads from Prometheus, as `linkerd viz stat`.
import { renderData, UsageError, type FlagSpecs } from '@minimesh/runtime';
import { getStat } from '../api.js';
import { parseWindow } from '../promql.js';
import { renderStat, toStatJson } from '../stat.js';
import {
  ALL_NAMESPACES,
  COMMON,
  optionalResource,
  output,
  PROM,
  resourceArg,
  vizSubcommand,
  withConnection,
} from './common.js';

const info = {
  name: 'minimesh viz stat',
  summary: 'golden metrics of workloads: meshed pods, success rate, RPS, latency p50/p95/p99, TCP connections',
  usage: 'minimesh viz stat <kind>[/<name>] [-n NS | -A] [--from R | --to R] [-o wide|json|yaml]',
};

const FLAGS = {
  ...COMMON,
  ...PROM,
  ...ALL_NAMESPACES,
  from: {
    type: 'string',
    default: '',
    description: 'only traffic from this resource (kind/name), as its proxies saw it',
  },
  'from-namespace': { type: 'string', default: '', description: 'namespace of --from (default: -n)' },
  to: { type: 'string', default: '', description: 'only traffic to this resource (kind/name)' },
  'to-namespace': { type: 'string', default: '', description: 'namespace of --to (default: -n)' },
  'time-window': {
    type: 'string',
    short: 't',
    default: '1m',
    description: 'window of the rates and quantiles (10s to 24h)',
  },
  output: { type: 'string', short: 'o', default: '', description: 'table, wide, json or yaml' },
} as const satisfies FlagSpecs;

export const statCommand = vizSubcommand({
  info,
  summary: 'golden metrics: meshed pods, success rate, RPS, latency p50/p95/p99, TCP connections',
  flags: FLAGS,
  async run({ values: f, positionals }, io, env) {
    const resource = resourceArg(positionals, info.name);
    const out = output(f.output, ['table', 'wide', 'json', 'yaml'], info.name);
    try {
      parseWindow(f['time-window']);
    } catch (err) {
      throw new UsageError(`${info.name}: ${(err as Error).message}`, { cause: err });
    }
    if (f.from && f.to) throw new UsageError(`${info.name}: --from and --to cannot be used together`);
    return withConnection(env, f, async ({ conn, deps }) => {
      // Namespaces are rows of their own: `stat ns` lists every namespace, as Linkerd's does.
      const ns = f['all-namespaces'] || resource.kind === 'namespace' ? '' : f.namespace || conn.namespace || 'default';
      const rows = await getStat(deps, {
        resource: { ...resource, namespace: ns },
        namespace: ns,
        ...(f.from ? { from: optionalResource(f.from, f['from-namespace'] || ns || 'default', 'from') } : {}),
        ...(f.to ? { to: optionalResource(f.to, f['to-namespace'] || ns || 'default', 'to') } : {}),
        window: f['time-window'],
      });
      if (out === 'json' || out === 'yaml') io.stdout.write(renderData(out, toStatJson(rows)));
      else if (rows.length === 0) io.stderr.write(`No ${resource.kind}s found${ns ? ` in namespace "${ns}"` : ''}.\n`);
      else
        io.stdout.write(
          renderStat(rows, { wide: out === 'wide', allNamespaces: ns === '' && resource.kind !== 'namespace' }),
        );
      return 0;
    });
  },
});
