// `minimesh viz <stat|edges|top|tap|dashboard>` and `minimesh diagnostics proxy-metrics`: flags in, the
// viz API, text out. The CLI package wires `connect` to @minimesh/kube; tests pass their own.
import {
  parseFlags,
  parseOutputFormat,
  renderData,
  renderRecord,
  UsageError,
  type FlagSpecs,
  type OutputFormat,
} from '@minimesh/runtime';
import { getEdges, getProxyMetrics, getStat, streamTap, type TapRequest, type VizDeps } from '../api.js';
import { renderEdges, toEdgesJson } from '../edges.js';
import { VizError } from '../errors.js';
import { prometheusAt, readVizConfig, type VizKube } from '../kube-io.js';
import { parseWindow } from '../promql.js';
import { parseResource, ResourceError, type Resource } from '../resource.js';
import { renderStat, toStatJson } from '../stat.js';
import { formatTapLine } from '../tap-record.js';
import { createTopAggregator, renderTop } from '../top.js';

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

const COMMON = {
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

const PROM = {
  'prometheus-url': {
    type: 'string',
    default: '',
    description: 'ask this Prometheus (default: the one the chart names in ConfigMap minimesh-viz)',
  },
} as const satisfies FlagSpecs;

const FILTERS = {
  to: { type: 'string', default: '', description: 'only requests to this resource (kind/name)' },
  'to-namespace': { type: 'string', default: '', description: "namespace of --to (default: the tap's)" },
  method: { type: 'string', default: '', description: 'only requests with this HTTP method' },
  path: { type: 'string', default: '', description: 'only requests whose path starts with this' },
  authority: { type: 'string', default: '', description: 'only requests to this :authority (Host)' },
} as const satisfies FlagSpecs;

function output(value: string, allowed: readonly OutputFormat[], command: string): OutputFormat {
  return parseOutputFormat(command, value, allowed);
}

function resourceArg(positionals: string[], command: string, opts: { needName?: boolean } = {}): Resource {
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

function optionalResource(text: string, namespace: string, flag: string): Resource | undefined {
  if (text === '') return undefined;
  try {
    return { ...parseResource(text), namespace };
  } catch (err) {
    throw new UsageError(`--${flag}: ${(err as Error).message}`, { cause: err });
  }
}

async function connectDeps(
  env: VizEnv,
  flags: { kubeconfig: string; context: string; 'control-plane-namespace': string; 'prometheus-url'?: string },
) {
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

function interrupted(env: VizEnv): AbortSignal {
  if (env.interrupt) return env.interrupt;
  const ac = new AbortController();
  const stop = () => ac.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return ac.signal;
}

const STAT_FLAGS = {
  ...COMMON,
  ...PROM,
  'all-namespaces': { type: 'boolean', short: 'A', description: 'every namespace' },
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

async function statCommand(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const info = {
    name: 'minimesh viz stat',
    summary: 'golden metrics of workloads: meshed pods, success rate, RPS, latency p50/p95/p99, TCP connections',
    usage: 'minimesh viz stat <kind>[/<name>] [-n NS | -A] [--from R | --to R] [-o wide|json|yaml]',
  };
  const parsed = parseFlags(info, STAT_FLAGS, argv);
  if ('help' in parsed) return (void io.stdout.write(parsed.help), 0);
  const f = parsed.values;
  const resource = resourceArg(parsed.positionals, info.name);
  const out = output(f.output, ['table', 'wide', 'json', 'yaml'], info.name);
  try {
    parseWindow(f['time-window']);
  } catch (err) {
    throw new UsageError(`${info.name}: ${(err as Error).message}`, { cause: err });
  }
  if (f.from && f.to) throw new UsageError(`${info.name}: --from and --to cannot be used together`);
  const { conn, deps } = await connectDeps(env, f);
  try {
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
  } finally {
    await conn.close?.();
  }
}

const EDGES_FLAGS = {
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

async function edgesCommand(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const info = {
    name: 'minimesh viz edges',
    summary: 'who talks to whom: source, destination, client and server identity, secured by mTLS or not',
    usage: 'minimesh viz edges <kind> [-n NS | -A] [-o wide|json|yaml]',
  };
  const parsed = parseFlags(info, EDGES_FLAGS, argv);
  if ('help' in parsed) return (void io.stdout.write(parsed.help), 0);
  const f = parsed.values;
  const resource = resourceArg(parsed.positionals, info.name);
  if (resource.kind === 'namespace')
    throw new UsageError(`${info.name}: edges are between workloads: give a kind such as deploy or po`);
  const out = output(f.output, ['table', 'wide', 'json', 'yaml'], info.name);
  const { conn, deps } = await connectDeps(env, f);
  try {
    const ns = f['all-namespaces'] ? '' : f.namespace || conn.namespace || 'default';
    const rows = await getEdges(deps, { kind: resource.kind, namespace: ns });
    if (out === 'json' || out === 'yaml') io.stdout.write(renderData(out, toEdgesJson(rows)));
    else if (rows.length === 0) io.stderr.write(`No edges found${ns ? ` in namespace "${ns}"` : ''}.\n`);
    else io.stdout.write(renderEdges(rows, { wide: out === 'wide' }));
    return 0;
  } finally {
    await conn.close?.();
  }
}

const TAP_FLAGS = {
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

function tapRequest(
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

async function tapCommand(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const info = {
    name: 'minimesh viz tap',
    summary: 'live requests of a workload: method, path, status, latency, identities',
    usage: 'minimesh viz tap <kind>/<name> [-n NS] [--to R] [--method M] [--path P] [--limit N] [-o wide|json|yaml]',
  };
  const parsed = parseFlags(info, TAP_FLAGS, argv);
  if ('help' in parsed) return (void io.stdout.write(parsed.help), 0);
  const f = parsed.values;
  const resource = resourceArg(parsed.positionals, info.name, { needName: true });
  const out = output(f.output, ['table', 'wide', 'json', 'yaml'], info.name);
  const { conn, config } = await connectDeps(env, f);
  try {
    const ns = f.namespace || conn.namespace || 'default';
    const req = tapRequest(f, resource, ns, info.name);
    const { tapUrl } = await config();
    await streamTap(
      conn.kube,
      tapUrl,
      req,
      {
        onRecord: (r) =>
          io.stdout.write(
            out === 'json' || out === 'yaml' ? renderRecord(out, r) : `${formatTapLine(r, { wide: out === 'wide' })}\n`,
          ),
        onWarning: (m) => io.stderr.write(`${m}\n`),
      },
      interrupted(env),
    );
    return 0;
  } finally {
    await conn.close?.();
  }
}

const TOP_FLAGS = {
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

async function topCommand(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const info = {
    name: 'minimesh viz top',
    summary: 'live requests of a workload grouped by route: count, best, worst, last latency, success rate',
    usage: 'minimesh viz top <kind>/<name> [-n NS] [--to R] [--path P] [--duration 10s] [-o json|yaml]',
  };
  const parsed = parseFlags(info, TOP_FLAGS, argv);
  if ('help' in parsed) return (void io.stdout.write(parsed.help), 0);
  const f = parsed.values;
  const resource = resourceArg(parsed.positionals, info.name, { needName: true });
  const out = output(f.output, ['table', 'json', 'yaml'], info.name);
  const live = Boolean(io.stdout.isTTY) && out === 'table';
  const durationText = f.duration || (live ? '' : '10s');
  let durationMs = 0;
  if (durationText) {
    const m = /^(\d+)(s|m)$/.exec(durationText);
    if (!m)
      throw new UsageError(
        `${info.name}: --duration ${durationText} is not valid: expected seconds or minutes such as 10s or 2m`,
      );
    durationMs = Number(m[1]) * (m[2] === 'm' ? 60_000 : 1000);
  }
  const { conn, config } = await connectDeps(env, f);
  const top = createTopAggregator();
  const ac = new AbortController();
  const stopAll = AbortSignal.any([ac.signal, interrupted(env)]);
  const timer = durationMs ? setTimeout(() => ac.abort(), durationMs) : undefined;
  const redraw = live ? setInterval(() => io.stdout.write(`\x1b[H\x1b[2J${renderTop(top.rows())}`), 1000) : undefined;
  try {
    const ns = f.namespace || conn.namespace || 'default';
    const req = tapRequest(f, resource, ns, info.name);
    const { tapUrl } = await config();
    await streamTap(
      conn.kube,
      tapUrl,
      req,
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
    await conn.close?.();
  }
}

const DASHBOARD_FLAGS = {
  ...COMMON,
  ...PROM,
  port: { type: 'string', default: '50750', description: 'local port of the dashboard (0: any free port)' },
  address: {
    type: 'string',
    default: '127.0.0.1',
    description: 'local address (the dashboard has no login: keep it on loopback)',
  },
} as const satisfies FlagSpecs;

async function dashboardCommand(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const info = {
    name: 'minimesh viz dashboard',
    summary: 'serve the viz dashboard on localhost: namespaces, golden metrics, the edge graph, live requests',
    usage: 'minimesh viz dashboard [--port 50750]',
  };
  const parsed = parseFlags(info, DASHBOARD_FLAGS, argv);
  if ('help' in parsed) return (void io.stdout.write(parsed.help), 0);
  const f = parsed.values;
  if (parsed.positionals.length > 0)
    throw new UsageError(`${info.name}: takes no arguments (got ${parsed.positionals.join(' ')})`);
  const port = Number(f.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`${info.name}: --port ${f.port} is not valid: expected 0 to 65535`);
  const { conn, deps, config } = await connectDeps(env, f);
  // Fail now, in one line, when viz is not installed, rather than in the page.
  if (!f['prometheus-url']) await config();
  const { createDashboard } = await import('../dashboard/server.js');
  const app = await createDashboard({
    deps,
    tapUrl: async () => (await config()).tapUrl,
    context: `${conn.server}${f.context ? ` (${f.context})` : ''}`,
    defaultNamespace: f.namespace || conn.namespace || 'default',
  });
  let url: string;
  try {
    url = await app.listen({ host: f.address, port });
  } catch (err) {
    await conn.close?.();
    throw new VizError('MINIMESH_VIZ_BAD_INPUT', `cannot listen on ${f.address}:${port}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  io.stdout.write(`minimesh viz dashboard available at:\n${url}\nPress Ctrl-C to stop.\n`);
  const close = async () => {
    await app.close();
    await conn.close?.();
  };
  env.onDashboard?.(url, close);
  const signal = interrupted(env);
  await new Promise<void>((resolve) =>
    signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  await close();
  return 0;
}

const SUBCOMMANDS: Record<
  string,
  { run: (argv: string[], io: CommandIO, env: VizEnv) => Promise<number>; summary: string }
> = {
  stat: {
    run: statCommand,
    summary: 'golden metrics: meshed pods, success rate, RPS, latency p50/p95/p99, TCP connections',
  },
  edges: { run: edgesCommand, summary: 'who talks to whom, with identities, secured by mTLS or not' },
  top: { run: topCommand, summary: 'live requests grouped by route' },
  tap: { run: tapCommand, summary: 'live requests, one line each' },
  dashboard: { run: dashboardCommand, summary: 'the web dashboard on localhost' },
};

export async function vizCommand(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const rows = Object.entries(SUBCOMMANDS).map(([n, c]) => `  ${n.padEnd(10)} ${c.summary}`);
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

const METRICS_FLAGS = {
  namespace: COMMON.namespace,
  kubeconfig: COMMON.kubeconfig,
  context: COMMON.context,
  port: { type: 'string', default: '4191', description: "the proxy's admin port" },
} as const satisfies FlagSpecs;

/** `minimesh diagnostics proxy-metrics <ns>/<pod>`: the proxy's /metrics through the API server's pod proxy. */
export async function diagnosticsCommand(argv: string[], io: CommandIO, env: VizEnv): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(
      "minimesh diagnostics — what a proxy knows\n\nUsage: minimesh diagnostics <command> [flags]\n\nCommands:\n  proxy-metrics   a proxy's raw Prometheus metrics, through the API server (no exec, no port-forward)\n",
    );
    return name === undefined ? 2 : 0;
  }
  if (name !== 'proxy-metrics') throw new UsageError(`unknown diagnostics command "${name}": expected proxy-metrics`);
  const info = {
    name: 'minimesh diagnostics proxy-metrics',
    summary: "a proxy's raw Prometheus metrics, read through the API server's pod proxy",
    usage: 'minimesh diagnostics proxy-metrics <namespace>/<pod> | -n <namespace> <pod>',
  };
  const parsed = parseFlags(info, METRICS_FLAGS, rest);
  if ('help' in parsed) return (void io.stdout.write(parsed.help), 0);
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
