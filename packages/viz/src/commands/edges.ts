// `minimesh viz edges`: who talks to whom, with identities, as `linkerd viz edges`.
import { renderData, UsageError, type FlagSpecs } from '@minimesh/runtime';
import { getEdges } from '../api.js';
import { renderEdges, toEdgesJson } from '../edges.js';
import { ALL_NAMESPACES, COMMON, output, PROM, resourceArg, vizSubcommand, withConnection } from './common.js';

const info = {
  name: 'minimesh viz edges',
  summary: 'who talks to whom: source, destination, client and server identity, secured by mTLS or not',
  usage: 'minimesh viz edges <kind> [-n NS | -A] [-o wide|json|yaml]',
};

const FLAGS = {
  ...COMMON,
  ...PROM,
  ...ALL_NAMESPACES,
  output: {
    type: 'string',
    short: 'o',
    default: '',
    description: 'table, wide (identities and reasons), json or yaml',
  },
} as const satisfies FlagSpecs;

export const edgesCommand = vizSubcommand({
  info,
  summary: 'who talks to whom, with identities, secured by mTLS or not',
  flags: FLAGS,
  async run({ values: f, positionals }, io, env) {
    const resource = resourceArg(positionals, info.name);
    if (resource.kind === 'namespace')
      throw new UsageError(`${info.name}: edges are between workloads: give a kind such as deploy or po`);
    const out = output(f.output, ['table', 'wide', 'json', 'yaml'], info.name);
    return withConnection(env, f, async ({ conn, deps }) => {
      const ns = f['all-namespaces'] ? '' : f.namespace || conn.namespace || 'default';
      const rows = await getEdges(deps, { kind: resource.kind, namespace: ns });
      if (out === 'json' || out === 'yaml') io.stdout.write(renderData(out, toEdgesJson(rows)));
      else if (rows.length === 0) io.stderr.write(`No edges found${ns ? ` in namespace "${ns}"` : ''}.\n`);
      else io.stdout.write(renderEdges(rows, { wide: out === 'wide' }));
      return 0;
    });
  },
});
