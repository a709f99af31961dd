// `minimesh viz <stat|stat-outbound|authz|edges|top|tap|dashboard>`: flags in, the viz API, text out; one file per
// subcommand beside this dispatcher, their shared opening in common.ts. The CLI package wires
// `connect` to @minimesh/kube; tests pass their own.
import { UsageError } from '@minimesh/runtime';
import type { CommandIO, VizEnv, VizSubcommand } from './common.js';
import { authzCommand } from './authz.js';
import { dashboardCommand } from './dashboard.js';
import { edgesCommand } from './edges.js';
import { statOutboundCommand } from './stat-outbound.js';
import { statCommand } from './stat.js';
import { tapCommand } from './tap.js';
import { topCommand } from './top.js';

export type { CommandIO, Connection, VizEnv } from './common.js';
export { diagnosticsCommand } from './diagnostics.js';

const SUBCOMMANDS: Record<string, VizSubcommand> = {
  stat: statCommand,
  'stat-outbound': statOutboundCommand,
  authz: authzCommand,
  edges: edgesCommand,
  top: topCommand,
  tap: tapCommand,
  dashboard: dashboardCommand,
};

export async function vizCommand(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const rows = Object.entries(SUBCOMMANDS).map(([n, c]) => `  ${n.padEnd(14)} ${c.summary}`);
    io.stdout.write(
      `minimesh viz — golden metrics, edges and live requests of the mesh (needs the chart's viz.enabled)\n\nUsage: minimesh viz <command> [flags]   (minimesh viz <command> --help for its flags)\n\nCommands:\n${rows.join('\n')}\n`,
    );
    return name === undefined ? 2 : 0;
  }
  const sub = SUBCOMMANDS[name];
  if (!sub)
    throw new UsageError(`unknown viz command "${name}": expected one of ${Object.keys(SUBCOMMANDS).join(', ')}`);
  return sub.run(rest, io, env);
}
