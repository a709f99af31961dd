// `minimesh viz top`: live requests of a workload grouped by route, as `linkerd viz top`: the tap's
// stream folded by the top aggregator, redrawn every second on a terminal.
import { ConfigError, parseDuration } from '@minimesh/config';
import { renderData, UsageError, type FlagSpecs } from '@minimesh/runtime';
import { createTopAggregator, renderTop } from '../top.js';
import { interrupted, output, resourceArg, vizSubcommand, withConnection } from './common.js';
import { runTap, TAP_FLAGS } from './tap.js';

const info = {
  name: 'minimesh viz top',
  summary: 'live requests of a workload grouped by route: count, best, worst, last latency, success rate',
  usage: 'minimesh viz top <kind>/<name> [-n NS] [--to R] [--path P] [--duration 10s] [-o json|yaml]',
};

const FLAGS = {
  ...TAP_FLAGS,
  output: {
    type: 'string',
    short: 'o',
    default: '',
    description: 'table (redrawn on a terminal), json or yaml (the rows once top ends)',
  },
  limit: { type: 'string', default: '1000', description: 'requests each proxy reports before top ends' },
  duration: {
    type: 'string',
    default: '',
    description: 'stop after this long, e.g. 10s (default: on Ctrl-C, or once a terminal is not attached: 10s)',
  },
} as const satisfies FlagSpecs;

export const topCommand = vizSubcommand({
  info,
  summary: 'live requests grouped by route',
  flags: FLAGS,
  async run({ values: f, positionals }, io, env) {
    const resource = resourceArg(positionals, info.name, { needName: true });
    const out = output(f.output, ['table', 'json', 'yaml'], info.name);
    const live = Boolean(io.stdout.isTTY) && out === 'table';
    const durationText = f.duration || (live ? '' : '10s');
    let durationMs = 0;
    try {
      if (durationText) durationMs = parseDuration('--duration', durationText);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      throw new UsageError(
        `${info.name}: --duration ${durationText} is not valid: expected a duration such as 10s, 2m or 1m30s`,
        { cause: err },
      );
    }
    return withConnection(env, f, async (connected) => {
      const top = createTopAggregator();
      const ac = new AbortController();
      const stopAll = AbortSignal.any([ac.signal, interrupted(env)]);
      const timer = durationMs ? setTimeout(() => ac.abort(), durationMs) : undefined;
      const redraw = live
        ? setInterval(() => io.stdout.write(`\x1b[H\x1b[2J${renderTop(top.rows())}`), 1000)
        : undefined;
      try {
        const ns = await runTap(
          connected,
          f,
          resource,
          info.name,
          { onRecord: (r) => top.add(r), onWarning: (m) => io.stderr.write(`${m}\n`) },
          stopAll,
        );
        const rows = top.rows();
        if (out === 'json' || out === 'yaml') io.stdout.write(renderData(out, rows));
        else if (rows.length === 0)
          io.stderr.write(`No requests seen by ${resource.kind}/${resource.name} in namespace "${ns}".\n`);
        else io.stdout.write(live ? `\x1b[H\x1b[2J${renderTop(rows)}` : renderTop(rows));
        return 0;
      } finally {
        if (timer) clearTimeout(timer);
        if (redraw) clearInterval(redraw);
      }
    });
  },
});
