// `minimesh viz stat-outbound`: a workload's outbound traffic per Service, route and backend (success
// rate, RPS, latency, timeouts, retries) from the proxies' route metrics, as `linkerd viz stat-outbound`.
import { renderData, UsageError, type FlagSpecs } from '@minimesh/runtime';
import { getStatOutbound } from '../api.js';
import { parseWindow } from '../promql.js';
import { renderStatOutbound, toStatOutboundJson } from '../stat-outbound.js';
import { COMMON, output, PROM, resourceArg, vizSubcommand, withConnection } from './common.js';

const info = {
  name: 'minimesh viz stat-outbound',
  summary:
    "a workload's outbound traffic per Service, route and backend: success rate, RPS, latency, timeouts, retries",
  usage: 'minimesh viz stat-outbound <kind>/<name> [-n NS] [-t WINDOW] [-o table|json|yaml]',
};

const FLAGS = {
  ...COMMON,
  ...PROM,
  'time-window': {
    type: 'string',
    short: 't',
    default: '1m',
    description: 'window of the rates and quantiles (10s to 24h)',
  },
  output: { type: 'string', short: 'o', default: '', description: 'table, json or yaml' },
} as const satisfies FlagSpecs;

export const statOutboundCommand = vizSubcommand({
  info,
  summary: 'outbound traffic of a workload per route and backend (canary splits)',
  flags: FLAGS,
  async run({ values: f, positionals }, io, env) {
    const resource = resourceArg(positionals, info.name, { needName: true });
    const out = output(f.output, ['table', 'json', 'yaml'], info.name);
    try {
      parseWindow(f['time-window']);
    } catch (err) {
      throw new UsageError(`${info.name}: ${(err as Error).message}`, { cause: err });
    }
    return withConnection(env, f, async ({ conn, deps }) => {
      const ns = f.namespace || conn.namespace || 'default';
      const rows = await getStatOutbound(deps, { resource, namespace: ns, window: f['time-window'] });
      if (out === 'json' || out === 'yaml') io.stdout.write(renderData(out, toStatOutboundJson(rows)));
      else if (rows.length === 0)
        io.stderr.write(
          `No outbound route traffic from ${resource.kind}/${resource.name} in namespace "${ns}" in the last ${f['time-window']}.\n`,
        );
      else io.stdout.write(renderStatOutbound(rows));
      return 0;
    });
  },
});
