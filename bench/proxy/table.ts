// The side-by-side table, made from the bench's JSON file (raw per-run numbers): medians of the runs with
// their spread (min–max), and minimesh / linkerd2 ratios. Also runnable on a saved file:
//   npx tsx bench/proxy/table.ts bench/proxy/last-run.json
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Variants of the minimesh pair, measured in the same run and reported as ratios against it. */
export const VARIANTS = ['tap-enabled', 'tap-observed', 'route-timeout', 'route-retry', 'no-outbound-policy'] as const;
export type Variant = (typeof VARIANTS)[number];
export type PairKind = 'minimesh' | 'minimesh-ab' | 'linkerd2' | Variant;

export type Placement = 'none' | 'one-cpu' | 'split';
/** The processes a placement puts on a CPU: the proxies by direction, and the load generator with the apps. */
export type PlacedRole = 'load' | 'outbound' | 'inbound';
/**
 * Where the bench runs the proxies (bench.ts --pin), each process with all its threads (taskset): what
 * the table's header says of it, and the CPU each role gets ('last': the machine's last CPU; a role
 * without one is left to the kernel). docs/proxy.md, "Where the kernel puts the proxies".
 */
export const PLACEMENTS: Record<
  Placement,
  { says: string | undefined; cpu: Partial<Record<PlacedRole, number | 'last'>> }
> = {
  none: { says: undefined, cpu: {} },
  'one-cpu': {
    says: 'every proxy on the last CPU, the load generator and the apps on CPU 0',
    cpu: { load: 0, outbound: 'last', inbound: 'last' },
  },
  split: { says: 'outbound proxies on CPU 0, inbound proxies on CPU 1', cpu: { outbound: 0, inbound: 1 } },
};

/** One load-generator phase as loadgen.mjs prints it. */
export interface Phase {
  p50: number;
  p99: number;
  p999: number;
  sent: number;
  ok: number;
  errors: number;
  cpu: number;
  /** The largest latency of the requests scheduled in each 100 ms (runs from 2026-11-29 13:00 on). */
  maxPer100ms?: number[];
}
export interface Sat {
  rps: number;
  ok: number;
  errors: number;
  cpu: number;
}
interface Mem {
  rss: number;
  anon: number;
  /** Private memory (USS, smaps_rollup Private_*); absent in files of runs before 2026-11-28. */
  priv?: number;
}
interface Runtime {
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  /** GC during the open-loop phase: total pause time (ms), count, major (mark-compact) time, pauses > 10 ms. */
  gcMs: number;
  gcCount: number;
  gcMajorMs: number;
  gcOver10: number;
  /** V8 heap spaces committed (MB) and external memory at the end of the open loop (runs from 2026-11-28 on). */
  heapMb?: Record<string, number>;
  externalMb?: number;
}
interface PerRequest {
  syscalls: number;
  switches: number;
}
export interface PairRun {
  readyMs: { client: number; server: number };
  idle: { client: Mem; server: Mem };
  loaded: { client: Mem; server: Mem };
  /** The warm-up at the open loop's load, right after start (runs from 2026-11-29 14:00 on). */
  warm?: Phase;
  open: Phase;
  /** CPU seconds per 1,000 requests of the open-loop phase (= cores per 1,000 rps); client = the outbound proxy, server = the inbound one. */
  cpuPer1k: { client: number; server: number };
  /** The kernel's part of cpuPer1k (stime; runs from 2026-11-29 16:30 on). */
  kernelCpuPer1k?: { client: number; server: number };
  /** --syscalls: system calls and context switches per request sent, during the open loop. */
  perRequest?: { client: PerRequest; server: PerRequest };
  sat: Sat;
  satCpu: { client: number; server: number };
  /** minimesh only: event-loop delay during the open-loop phase, GC so far. */
  runtime?: { client: Runtime; server: Runtime } | undefined;
  /** tap-observed: events the live reader read from both proxies, requests they forwarded meanwhile, its own CPU. */
  tap?: { events: number; requests: number; readerCpuPer1k: number };
  /**
   * route-*: the check that the route is in force (GET /delay/1000 cut by the route's timeout); route-retry
   * also the status of GET /flaky/<new key> (the app answers 503 once, so 200 means the proxy retried).
   */
  route?: { status: number; ms: number; retried?: number; restored?: string };
}
export interface Run {
  index: number;
  loadavg: number[];
  direct: { open: Phase; sat: Sat };
  pairs: Partial<Record<PairKind, PairRun>>;
  /** Variants left out of this run because their check failed, and why. */
  failed?: Partial<Record<PairKind, string>>;
}
export interface BenchFile {
  date: string;
  commit: string;
  node: string;
  cpus: number;
  cpuModel: string;
  loadavg: number[];
  config: {
    rate: number;
    conns: number;
    seconds: number;
    satConns: number;
    satSeconds: number;
    /** Absent: runs before 2026-11-29 14:00, warmed up 1 s at 200 rps. */
    warmupSeconds?: number;
    runs: number;
    /** Where the proxies ran (bench.ts --pin); absent: runs before 2026-11-30 16:40, left to the kernel. */
    pin?: Placement;
  };
  peer: { path: string } | { reason: string };
  /** The policy controller ran (every minimesh proxy then had its inbound and outbound policies). */
  policyController?: boolean;
  variants?: { measured: string[]; notMeasured: Partial<Record<Variant, string>> };
  /** The environment every minimesh proxy ran with (the image's), and the A/B pair's over it. Absent before 2026-11-29 23:00. */
  env?: { image: Record<string, string>; ab?: Record<string, string> };
  runs: Run[];
}

const GOALS = {
  p50: 1.3,
  p99: 2,
  cpu: 1.5,
  sat: 0.7,
  rss: 2,
  priv: 3,
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

interface Stat {
  med: number;
  min: number;
  max: number;
}
function stat(xs: number[]): Stat {
  return { med: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

function fmt(s: Stat | undefined, digits: number, unit = ''): string {
  if (!s || Number.isNaN(s.med)) return 'not measured';
  const f = (n: number) => n.toFixed(digits);
  return s.min === s.max ? `${f(s.med)}${unit}` : `${f(s.med)}${unit} (${f(s.min)}–${f(s.max)})`;
}

/** "median (min–max)" of the values, `digits` after the point (floor.ts's table too). */
export function spread(xs: number[], digits: number, unit = ''): string {
  return fmt(stat(xs), digits, unit);
}

/** Per-run values of `get` for a pair (runs where it was measured). */
function per(file: BenchFile, kind: PairKind, get: (p: PairRun, r: Run) => number): number[] {
  return file.runs.flatMap((r) => (r.pairs[kind] ? [get(r.pairs[kind]!, r)] : []));
}

export function renderTable(file: BenchFile): string {
  const has = (k: PairKind) => file.runs.some((r) => r.pairs[k]);
  const kinds: PairKind[] = (['minimesh', 'minimesh-ab', 'linkerd2'] as PairKind[]).filter(has);
  const peerMeasured = has('linkerd2');
  const notMeasured = 'reason' in file.peer ? file.peer.reason : 'not measured';
  const c = file.config;
  const rows: Array<{
    label: string;
    goal: string;
    values: (k: PairKind) => number[];
    digits: number;
    unit: string;
    goalOk?: (r: number) => boolean;
    /** A minimesh / linkerd2 ratio also without a goal. */
    ratio?: boolean;
    /** Left out when no pair has a value (figures older runs did not record, or --syscalls not given). */
    optional?: boolean;
  }> = [
    {
      label: `added latency p50 (${c.rate} rps, ${c.conns} conns)`,
      values: (k) => per(file, k, (p, r) => p.open.p50 - r.direct.open.p50),
      digits: 2,
      unit: ' ms',
      goal: `≤ ${GOALS.p50}x`,
      goalOk: (x) => x <= GOALS.p50,
    },
    {
      label: 'added latency p99',
      values: (k) => per(file, k, (p, r) => p.open.p99 - r.direct.open.p99),
      digits: 2,
      unit: ' ms',
      goal: `≤ ${GOALS.p99}x`,
      goalOk: (x) => x <= GOALS.p99,
    },
    {
      // The whole p99, not less the direct path's: its ratio stays defined when the peer adds less than
      // the direct path's own run-to-run noise (then the added ratio above has no positive denominator).
      label: '  latency p99 through the pair',
      values: (k) => per(file, k, (p) => p.open.p99),
      digits: 2,
      unit: ' ms',
      goal: '',
      ratio: true,
    },
    {
      label: `  added latency p99, cold: the first ${c.warmupSeconds ?? 1} s after start`,
      values: (k) =>
        per(file, k, (p, r) => (p.warm ? p.warm.p99 - r.direct.open.p99 : NaN)).filter((x) => !Number.isNaN(x)),
      digits: 2,
      unit: ' ms',
      goal: '',
      ratio: true,
    },
    {
      label: 'CPU per 1k rps, outbound proxy',
      values: (k) => per(file, k, (p) => p.cpuPer1k.client),
      digits: 3,
      unit: ' core',
      goal: `≤ ${GOALS.cpu}x`,
      goalOk: (x) => x <= GOALS.cpu,
    },
    {
      label: 'CPU per 1k rps, inbound proxy',
      values: (k) => per(file, k, (p) => p.cpuPer1k.server),
      digits: 3,
      unit: ' core',
      goal: `≤ ${GOALS.cpu}x`,
      goalOk: (x) => x <= GOALS.cpu,
    },
    ...(['client', 'server'] as const).map((side) => ({
      label: `  CPU per 1k rps in the kernel, ${side === 'client' ? 'outbound' : 'inbound'} proxy`,
      values: (k: PairKind) => per(file, k, (p) => p.kernelCpuPer1k?.[side] ?? NaN).filter((x) => !Number.isNaN(x)),
      digits: 3,
      unit: ' core',
      goal: '',
      ratio: true,
      optional: true,
    })),
    ...(['client', 'server'] as const).flatMap((side) =>
      (['syscalls', 'switches'] as const).map((what) => ({
        label: `  ${what === 'syscalls' ? 'system calls' : 'context switches'} per request, ${
          side === 'client' ? 'outbound' : 'inbound'
        } proxy`,
        values: (k: PairKind) => per(file, k, (p) => p.perRequest?.[side][what] ?? NaN).filter((x) => !Number.isNaN(x)),
        digits: 2,
        unit: '',
        goal: '',
        ratio: true,
        optional: true,
      })),
    ),
    {
      label: `saturated throughput through the pair (${c.satConns} conns)`,
      values: (k) => per(file, k, (p) => p.sat.rps),
      digits: 0,
      unit: ' rps',
      goal: `≥ ${GOALS.sat}x`,
      goalOk: (x) => x >= GOALS.sat,
    },
    {
      label: 'RSS under load, outbound proxy',
      values: (k) => per(file, k, (p) => p.loaded.client.rss),
      digits: 1,
      unit: ' MB',
      goal: `≤ ${GOALS.rss}x`,
      goalOk: (x) => x <= GOALS.rss,
    },
    {
      label: 'RSS under load, inbound proxy',
      values: (k) => per(file, k, (p) => p.loaded.server.rss),
      digits: 1,
      unit: ' MB',
      goal: `≤ ${GOALS.rss}x`,
      goalOk: (x) => x <= GOALS.rss,
    },
    {
      label: 'private memory (USS) under load, outbound proxy',
      values: (k) => per(file, k, (p) => p.loaded.client.priv ?? NaN).filter((x) => !Number.isNaN(x)),
      digits: 1,
      unit: ' MB',
      goal: `≤ ${GOALS.priv}x`,
      goalOk: (x) => x <= GOALS.priv,
    },
    {
      label: 'private memory (USS) under load, inbound proxy',
      values: (k) => per(file, k, (p) => p.loaded.server.priv ?? NaN).filter((x) => !Number.isNaN(x)),
      digits: 1,
      unit: ' MB',
      goal: `≤ ${GOALS.priv}x`,
      goalOk: (x) => x <= GOALS.priv,
    },
    {
      label: 'errors (all phases)',
      values: (k) => per(file, k, (p) => p.open.errors + p.sat.errors),
      digits: 0,
      unit: '',
      goal: '0',
    },
    {
      label: '  RSS idle, outbound / inbound (anonymous in the note)',
      values: (k) => per(file, k, (p) => (p.idle.client.rss + p.idle.server.rss) / 2),
      digits: 1,
      unit: ' MB',
      goal: '',
    },
    {
      label: '  saturated CPU, outbound + inbound proxy',
      values: (k) => per(file, k, (p) => p.satCpu.client + p.satCpu.server),
      digits: 2,
      unit: ' core',
      goal: '',
    },
    {
      label: '  ready after start (certificate in hand)',
      values: (k) => per(file, k, (p) => Math.max(p.readyMs.client, p.readyMs.server)),
      digits: 0,
      unit: ' ms',
      goal: '',
    },
  ];
  const own = kinds.filter((k) => k !== 'linkerd2');
  const ab = own.includes('minimesh-ab');
  const header = [
    'measure',
    ...own,
    'linkerd2',
    'minimesh / linkerd2',
    'goal',
    ...(ab ? ['minimesh / minimesh-ab'] : []),
  ];
  let out = '';
  const la = file.loadavg.map((x) => x.toFixed(2)).join(' ');
  out += `\nminimesh-proxy vs linkerd2-proxy, one run: ${file.date.slice(0, 16).replace('T', ' ')} UTC, commit ${file.commit}, `;
  out += `load average at start ${la}; ${file.cpus} × ${file.cpuModel}, node ${file.node}; `;
  out += `${c.runs} runs, medians (min–max); ${c.seconds} s open loop, ${c.satSeconds} s closed loop per pair and run.\n`;
  const pinned = c.pin === undefined ? undefined : PLACEMENTS[c.pin].says;
  if (pinned !== undefined) out += `Pinned (--pin ${c.pin}): ${pinned}.\n`;
  const envText = (e: Record<string, string>) =>
    Object.entries(e)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ') || 'nothing';
  if (file.env) {
    out += `minimesh's environment as its image sets it: ${envText(file.env.image)}`;
    out +=
      file.env.ab && Object.keys(file.env.ab).length > 0
        ? `; minimesh-ab's over it: ${envText(file.env.ab)}.\n`
        : '.\n';
  }
  if (!peerMeasured) out += `linkerd2-proxy: ${notMeasured}\n`;
  out += `\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n`;
  // A ratio is taken per run (same run, same moment), then its median and spread.
  // A run whose denominator is not positive (the peer's added latency within the direct path's noise)
  // gives no ratio; the cell then says over how many runs the median was taken.
  const ratio = (a: number[], b: number[]) => {
    const r = a.map((v, i) => ((b[i] as number) > 0 ? v / (b[i] as number) : NaN)).filter((x) => Number.isFinite(x));
    return r.length
      ? { ...stat(r), of: `${r.length < a.length ? ` (${r.length} of ${a.length} runs)` : ''}` }
      : undefined;
  };
  for (const row of rows) {
    if (row.optional && kinds.every((k) => row.values(k).length === 0)) continue;
    const cells = [row.label];
    for (const k of own) cells.push(fmt(stat(row.values(k)), row.digits, row.unit));
    if (peerMeasured) {
      cells.push(fmt(stat(row.values('linkerd2')), row.digits, row.unit));
      const wantsRatio = row.goal !== '' || row.ratio === true;
      const s = wantsRatio ? ratio(row.values('minimesh'), row.values('linkerd2')) : undefined;
      const verdict = s && row.goalOk ? (row.goalOk(s.med) ? ' met' : ' **not met**') : '';
      const noRatio =
        wantsRatio && row.values('linkerd2').some((v) => v <= 0) && row.values('minimesh').some((v) => v > 0)
          ? 'no run with a positive peer figure'
          : '';
      cells.push(s ? `${fmt(s, 2, 'x')}${s.of}${verdict}` : noRatio);
    } else cells.push('not measured', 'not measured');
    cells.push(row.goal);
    if (ab) {
      const s = ratio(row.values('minimesh'), row.values('minimesh-ab'));
      cells.push(s ? `${fmt(s, 2, 'x')}${s.of}` : '');
    }
    out += `| ${cells.join(' | ')} |\n`;
  }
  // The minimesh processes' own runtime figures.
  for (const k of kinds.filter((x) => x !== 'linkerd2')) {
    const rt = (side: 'client' | 'server', f: (r: Runtime) => number) =>
      stat(per(file, k, (p) => (p.runtime ? f(p.runtime[side]) : NaN)));
    out += `\n${k}: event-loop delay during the open loop, outbound / inbound proxy: p50 ${fmt(
      rt('client', (r) => r.lagP50Ms),
      2,
    )} / ${fmt(
      rt('server', (r) => r.lagP50Ms),
      2,
    )} ms, `;
    out += `p99 ${fmt(
      rt('client', (r) => r.lagP99Ms),
      2,
    )} / ${fmt(
      rt('server', (r) => r.lagP99Ms),
      2,
    )} ms, max ${fmt(
      rt('client', (r) => r.lagMaxMs),
      1,
    )} / ${fmt(
      rt('server', (r) => r.lagMaxMs),
      1,
    )} ms; `;
    out += `GC since start ${fmt(
      rt('client', (r) => r.gcMs),
      0,
    )} / ${fmt(
      rt('server', (r) => r.gcMs),
      0,
    )} ms in ${fmt(
      rt('client', (r) => r.gcCount),
      0,
    )} / ${fmt(
      rt('server', (r) => r.gcCount),
      0,
    )} collections; `;
    const spaces = ['new', 'old', 'code', 'large_object'];
    if (per(file, k, (p) => (p.runtime?.client.heapMb ? 1 : NaN)).some((x) => x === 1)) {
      const heap = (side: 'client' | 'server') =>
        spaces
          .map(
            (sp) =>
              `${sp} ${fmt(
                rt(side, (r) => r.heapMb?.[sp] ?? NaN),
                1,
              )}`,
          )
          .concat(
            `external ${fmt(
              rt(side, (r) => r.externalMb ?? NaN),
              1,
            )}`,
          )
          .join(', ');
      out += `V8 heap committed after the open loop (MB), outbound: ${heap('client')}; inbound: ${heap('server')}; `;
    }
    out += `anonymous RSS idle ${fmt(stat(per(file, k, (p) => p.idle.client.anon)), 1)} / ${fmt(stat(per(file, k, (p) => p.idle.server.anon)), 1)} MB, under load ${fmt(stat(per(file, k, (p) => p.loaded.client.anon)), 1)} / ${fmt(stat(per(file, k, (p) => p.loaded.server.anon)), 1)} MB.\n`;
  }
  const d = (f: (r: Run) => number) => stat(file.runs.map(f));
  out += `direct (no proxies): p50 ${fmt(
    d((r) => r.direct.open.p50),
    2,
  )} ms, p99 ${fmt(
    d((r) => r.direct.open.p99),
    2,
  )} ms, saturated ${fmt(
    d((r) => r.direct.sat.rps),
    0,
  )} rps (generator ${fmt(
    d((r) => r.direct.sat.cpu),
    2,
  )} core).\n`;
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const path = process.argv[2] ?? fileURLToPath(new URL('./last-run.json', import.meta.url));
  process.stdout.write(renderTable(JSON.parse(readFileSync(path, 'utf8')) as BenchFile));
}

const VARIANT_NOTES: Record<Variant, string> = {
  'tap-enabled': 'tap server configured (MINIMESH_PROXY_TAP_SVC_NAME), nobody observing',
  'tap-observed': 'tap server configured, a live reader observing every request on both proxies',
  'route-timeout': 'an HTTPRoute on the Service whose rules carry request timeouts',
  'route-retry': 'the same HTTPRoute with a retry policy (retry.minimesh.io/http 5xx, limit 2, timeout 2s)',
  'no-outbound-policy': 'the outbound proxy without a policy controller (no OutboundPolicy)',
};

/**
 * The variants of the minimesh pair against it (tap off; with the policy controller when it ran, no
 * HTTPRoute): each figure, and its ratio to the minimesh pair's taken per run, median (min–max).
 */
export function renderVariants(file: BenchFile): string {
  const v = file.variants;
  if (!v || (v.measured.length === 0 && Object.keys(v.notMeasured).length === 0)) return '';
  const kinds = VARIANTS.filter((k) => file.runs.some((r) => r.pairs[k]));
  const rows: Array<{ label: string; get: (p: PairRun) => number; digits: number; unit: string }> = [
    { label: 'saturated throughput', get: (p) => p.sat.rps, digits: 0, unit: ' rps' },
    { label: 'CPU per 1k rps, outbound proxy', get: (p) => p.cpuPer1k.client, digits: 3, unit: ' core' },
    { label: 'CPU per 1k rps, inbound proxy', get: (p) => p.cpuPer1k.server, digits: 3, unit: ' core' },
    {
      label: `latency p50 (${file.config.rate} rps)`,
      get: (p) => p.open.p50,
      digits: 2,
      unit: ' ms',
    },
    { label: 'latency p99', get: (p) => p.open.p99, digits: 2, unit: ' ms' },
    { label: 'errors (all phases)', get: (p) => p.open.errors + p.sat.errors, digits: 0, unit: '' },
  ];
  let out = `\nVariants of the minimesh pair, same run: each figure, then its ratio to the minimesh pair's (tap off; `;
  out += file.policyController ? 'policy controller on, no HTTPRoute' : 'no policy controller';
  out += `) taken per run, median (min–max) over ${file.runs.length} runs.\n`;
  for (const k of VARIANTS) {
    if (kinds.includes(k)) out += `- ${k}: ${VARIANT_NOTES[k]}\n`;
    else if (v.notMeasured[k]) out += `- ${k}: ${v.notMeasured[k]}\n`;
    for (const r of file.runs) if (r.failed?.[k]) out += `- ${k}: not measured in run ${r.index + 1}: ${r.failed[k]}\n`;
  }
  if (kinds.length === 0) return out;
  const header = ['measure', 'minimesh', ...kinds.flatMap((k) => [k, `${k} / minimesh`])];
  out += `\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n`;
  for (const row of rows) {
    const base = file.runs.map((r) => (r.pairs.minimesh ? row.get(r.pairs.minimesh) : NaN));
    const cells = [row.label, fmt(stat(base.filter((x) => !Number.isNaN(x))), row.digits, row.unit)];
    for (const k of kinds) {
      const mine = file.runs.map((r) => (r.pairs[k] ? row.get(r.pairs[k]!) : NaN));
      cells.push(fmt(stat(mine.filter((x) => !Number.isNaN(x))), row.digits, row.unit));
      const ratios = mine.map((x, i) => (base[i]! > 0 ? x / base[i]! : NaN)).filter((x) => Number.isFinite(x));
      cells.push(row.label.startsWith('errors') || ratios.length === 0 ? '' : fmt(stat(ratios), 2, 'x'));
    }
    out += `| ${cells.join(' | ')} |\n`;
  }
  const tapRuns = file.runs.flatMap((r) => (r.pairs['tap-observed']?.tap ? [r.pairs['tap-observed'].tap] : []));
  if (tapRuns.length > 0)
    out += `\ntap-observed: the reader read ${fmt(
      stat(tapRuns.map((t) => t.events / t.requests)),
      2,
    )} events per request over both proxies (3 per request and proxy when it keeps up: request init, response init, response end; fewer: the proxies' bounded buffers dropped), using ${fmt(
      stat(tapRuns.map((t) => t.readerCpuPer1k)),
      3,
    )} core per 1k rps itself (not in the proxies' figures).\n`;
  for (const k of ['route-timeout', 'route-retry'] as const) {
    const routeRuns = file.runs.flatMap((r) => (r.pairs[k]?.route ? [r.pairs[k].route] : []));
    if (routeRuns.length === 0) continue;
    const retried = routeRuns.flatMap((x) => (x.retried !== undefined ? [x.retried] : []));
    out += `${k}: the route was in force in every run (GET /delay/1000 answered ${[
      ...new Set(routeRuns.map((x) => x.status)),
    ].join('/')} after ${fmt(stat(routeRuns.map((x) => x.ms)), 0)} ms, cut by the route's 100 ms timeout${
      retried.length
        ? `; GET /flaky/<new key>, 503 from the app once, answered ${[...new Set(retried)].join('/')}: retried`
        : ''
    }); the measured path /bench matched the rule with a 10 s timeout.\n`;
    for (const r of file.runs)
      if (r.pairs[k]?.route?.restored) out += `${k}, run ${r.index + 1}: ${r.pairs[k].route.restored}.\n`;
  }
  return out;
}
