// What every `minimesh viz` subcommand shares: the types the CLI wires in, the common flags, the
// opening (flags parsed and --help answered, then the connection and the viz API), resource arguments
// and Ctrl-C. Each subcommand is a file of its own beside this one.
import {
  parseFlags,
  parseOutputFormat,
  renderData,
  UsageError,
  type FlagSpecs,
  type FlagValues,
  type OutputFormat,
} from '@minimesh/runtime';
import type { VizDeps } from '../api.js';
import { parseWindow } from '../promql.js';
import { prometheusAt, readVizConfig, type VizKube } from '../kube-io.js';
import { parseResource, ResourceError, type Resource } from '../resource.js';

export interface CommandIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
}

export interface Connection {
  kube: VizKube;
  /** The API server, for messages and the dashboard's header. */
  server: string;
  /** The kubeconfig context's namespace, if it names one. */
  namespace: string | undefined;
  close?(): Promise<void>;
}

export interface VizEnv {
  connect(opts: { kubeconfig: string; context: string }): Promise<Connection>;
  /** Ctrl-C: ends a tap, top or the dashboard (default: SIGINT/SIGTERM of this process). */
  interrupt?: AbortSignal;
  /** Called with the dashboard's URL once it listens (tests; the CLI prints it). */
  onDashboard?: (url: string, close: () => Promise<void>) => void;
}

/** A subcommand: what the dispatcher lists, and how it runs. */
export interface VizSubcommand {
  summary: string;
  run(argv: string[], io: CommandIO, env: VizEnv): Promise<number>;
}

export const COMMON = {
  namespace: {
    type: 'string',
    short: 'n',
    default: '',
    description: 'namespace (default: the context\'s, else "default")',
  },
  kubeconfig: {
    type: 'string',
    default: '',
    description: 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, the local cluster)',
  },
  context: { type: 'string', default: '', description: 'kubeconfig context to use' },
  'control-plane-namespace': {
    type: 'string',
    default: 'minimesh',
    description: 'namespace of the minimesh control plane',
  },
} as const satisfies FlagSpecs;

export const PROM = {
  'prometheus-url': {
    type: 'string',
    default: '',
    description: 'ask this Prometheus (default: the one the chart names in ConfigMap minimesh-viz)',
  },
} as const satisfies FlagSpecs;

export const FILTERS = {
  to: { type: 'string', default: '', description: 'only requests to this resource (kind/name)' },
  'to-namespace': { type: 'string', default: '', description: "namespace of --to (default: the tap's)" },
  method: { type: 'string', default: '', description: 'only requests with this HTTP method' },
  path: { type: 'string', default: '', description: 'only requests whose path starts with this' },
  authority: { type: 'string', default: '', description: 'only requests to this :authority (Host)' },
} as const satisfies FlagSpecs;

export interface CommandInfo {
  name: string;
  summary: string;
  usage: string;
}

/** What a subcommand's run gets: its flags parsed. */
export interface Parsed<S extends FlagSpecs> {
  values: FlagValues<S>;
  positionals: string[];
}

/**
 * A subcommand from its info and flags and what it does with them: the opening they all share (the
 * flags parsed, --help answered) is done here.
 */
export function vizSubcommand<S extends FlagSpecs>(spec: {
  info: CommandInfo;
  /** Its line in `minimesh viz --help`. */
  summary: string;
  flags: S;
  run(parsed: Parsed<S>, io: CommandIO, env: VizEnv): Promise<number>;
}): VizSubcommand {
  return {
    summary: spec.summary,
    run: async (argv, io, env) => {
      const parsed = parseCommand(spec.info, spec.flags, argv, io);
      return parsed ? spec.run(parsed, io, env) : 0;
    },
  };
}

export const ALL_NAMESPACES = {
  'all-namespaces': { type: 'boolean', short: 'A', description: 'every namespace' },
} as const satisfies FlagSpecs;

/** The opening: flags parsed; undefined when --help was asked for (and printed). */
export function parseCommand<S extends FlagSpecs>(
  info: CommandInfo,
  flags: S,
  argv: string[],
  io: CommandIO,
): Parsed<S> | undefined {
  const parsed = parseFlags(info, flags, argv);
  if ('help' in parsed) {
    io.stdout.write(parsed.help);
    return undefined;
  }
  return parsed;
}

export function output(value: string, allowed: readonly OutputFormat[], command: string): OutputFormat {
  return parseOutputFormat(command, value, allowed);
}

export function resourceArg(positionals: string[], command: string, opts: { needName?: boolean } = {}): Resource {
  if (positionals.length === 0 || positionals.length > 2)
    throw new UsageError(`${command}: expected one resource such as deploy, deploy/web or po/web-1 (see --help)`);
  try {
    const r = parseResource(positionals[0] ?? '', positionals[1]);
    if (opts.needName && r.name === '')
      throw new ResourceError(`"${positionals[0]}": name one workload, e.g. deploy/web`);
    return r;
  } catch (err) {
    if (err instanceof ResourceError) throw new UsageError(`${command}: ${err.message}`, { cause: err });
    throw err;
  }
}

export function optionalResource(text: string, namespace: string, flag: string): Resource | undefined {
  if (text === '') return undefined;
  try {
    return { ...parseResource(text), namespace };
  } catch (err) {
    throw new UsageError(`--${flag}: ${(err as Error).message}`, { cause: err });
  }
}

export interface Connected {
  conn: Connection;
  deps: VizDeps;
  /** The chart's minimesh-viz ConfigMap (Prometheus and tap addresses), read once when first asked for. */
  config(): Promise<Awaited<ReturnType<typeof readVizConfig>>>;
}

/** The connection and the viz API over it. */
export async function connectDeps(
  env: VizEnv,
  flags: { kubeconfig: string; context: string; 'control-plane-namespace': string; 'prometheus-url'?: string },
): Promise<Connected> {
  const conn = await env.connect({ kubeconfig: flags.kubeconfig, context: flags.context });
  const cp = flags['control-plane-namespace'];
  let vizConfig: Awaited<ReturnType<typeof readVizConfig>> | undefined;
  const config = async () => (vizConfig ??= await readVizConfig(conn.kube, cp));
  const deps: VizDeps = {
    kube: conn.kube,
    prometheus: async () => prometheusAt(conn.kube, flags['prometheus-url'] || (await config()).prometheusUrl),
  };
  return { conn, deps, config };
}

/** Runs `fn` connected, and closes the connection however it ends. */
export async function withConnection<T>(
  env: VizEnv,
  flags: Parameters<typeof connectDeps>[1],
  fn: (c: Connected) => Promise<T>,
): Promise<T> {
  const c = await connectDeps(env, flags);
  try {
    return await fn(c);
  } finally {
    await c.conn.close?.();
  }
}

/** The flags of a command over one workload and a window: `-t`, `-o table|json|yaml`. */
const WORKLOAD_TABLE_FLAGS = {
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

/**
 * A command over one workload's rows in a window (`<kind>/<name> [-n NS] [-t WINDOW] [-o table|json|yaml]`):
 * its rows from the viz API, as a table, or as data; `none` says what no rows mean.
 */
export function workloadTableCommand<R>(spec: {
  info: CommandInfo;
  summary: string;
  fetch(deps: VizDeps, req: { resource: Resource; namespace: string; window: string }): Promise<R[]>;
  render(rows: readonly R[]): string;
  data(rows: readonly R[]): unknown;
  none(what: string): string;
}): VizSubcommand {
  const { info } = spec;
  return vizSubcommand({
    info,
    summary: spec.summary,
    flags: WORKLOAD_TABLE_FLAGS,
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
        const rows = await spec.fetch(deps, { resource, namespace: ns, window: f['time-window'] });
        if (out === 'json' || out === 'yaml') io.stdout.write(renderData(out, spec.data(rows)));
        else if (rows.length === 0)
          io.stderr.write(
            `${spec.none(`${resource.kind}/${resource.name}`)} in namespace "${ns}" in the last ${f['time-window']}.\n`,
          );
        else io.stdout.write(spec.render(rows));
        return 0;
      });
    },
  });
}

export function interrupted(env: VizEnv): AbortSignal {
  if (env.interrupt) return env.interrupt;
  const ac = new AbortController();
  const stop = () => ac.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return ac.signal;
}
