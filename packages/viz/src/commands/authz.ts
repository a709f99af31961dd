// `minimesh viz authz`: a workload's inbound requests per Server, route and authorization — allowed,
// refused by its policy (UNAUTHORIZED) and by an HTTPLocalRateLimitPolicy (RATE_LIMITED) — as
// `linkerd viz authz`.
import { renderData, UsageError, type FlagSpecs } from '@minimesh/runtime';
import { getAuthz } from '../api.js';
import { renderAuthz } from '../authz.js';
import { parseWindow } from '../promql.js';
import { COMMON, output, PROM, resourceArg, vizSubcommand, withConnection } from './common.js';

const info = {
  name: 'minimesh viz authz',
  summary: "a workload's inbound requests per Server, route and authorization: allowed, unauthorized, rate limited",
  usage: 'minimesh viz authz <kind>/<name> [-n NS] [-t WINDOW] [-o table|json|yaml]',
};

const FLAGS = {
  ...COMMON,
  ...PROM,
  'time-window': { type: 'string', short: 't', default: '1m', description: 'window of the rates (10s to 24h)' },
  output: { type: 'string', short: 'o', default: '', description: 'table, json or yaml' },
} as const satisfies FlagSpecs;

export const authzCommand = vizSubcommand({
  info,
  summary: 'inbound requests of a workload per Server and authorization (denied, rate limited)',
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
      const rows = await getAuthz(deps, { resource, namespace: ns, window: f['time-window'] });
      if (out === 'json' || out === 'yaml') io.stdout.write(renderData(out, rows));
      else if (rows.length === 0)
        io.stderr.write(
          `No inbound requests to ${resource.kind}/${resource.name} in namespace "${ns}" in the last ${f['time-window']}.\n`,
        );
      else io.stdout.write(renderAuthz(rows));
      return 0;
    });
  },
});
