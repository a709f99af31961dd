// `minimesh viz edges`: who talks to whom, with identities, as `linkerd viz edges`.
import { renderData, UsageError, type FlagSpecs } from '@minimesh/runtime';
import { getEdges } from '../api.js';
import { renderEdges, toEdgesJson } from '../edges.js';
import {
  COMMON,
  output,
  parseCommand,
  PROM,
  resourceArg,
  withConnection,
  type CommandIO,
  type VizEnv,
  type VizSubcommand,
} from './common.js';

const info = {
  name: 'minimesh viz edges',
  summary: 'who talks to whom: source, destination, client and server identity, secured by mTLS or not',
  usage: 'minimesh viz edges <kind> [-n NS | -A] [-o wide|json|yaml]',
};

const FLAGS = {
  ...COMMON,
  ...PROM,
  'all-namespaces': { type: 'boolean', short: 'A', description: 'every namespace' },
  output: {
    type: 'string',
    short: 'o',
    default: '',
    description: 'table, wide (identities and reasons), json or yaml',
  },
} as const satisfies FlagSpecs;

async function run(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const parsed = parseCommand(info, FLAGS, argv, io);
  if (!parsed) return 0;
  const f = parsed.values;
  const resource = resourceArg(parsed.positionals, info.name);
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
}

export const edgesCommand: VizSubcommand = {
  summary: 'who talks to whom, with identities, secured by mTLS or not',
  run,
};
