// The floor of a Node proxy: what memory (and CPU, latency, throughput, for context) the smallest proxy
// pair we could write on Node (floor-proxy.mjs: HTTP/1.1 in, HTTP/2 over mutual TLS between, HTTP/1.1
// out, Node's own http, http2 and tls and nothing else) holds under the side-by-side bench's load. A
// proxy for Node that does more, minimesh's included, holds at least about as much memory; the bench's
// memory goals for minimesh-proxy (against linkerd2-proxy's) are read against it in docs/proxy.md, "The
// floor of a Node proxy".
//
// Each run: the app (server.mjs), then for each V8 setting (--configs) a fresh floor pair on 127.0.0.1,
// the bench's warm-up and open loop (1,000 rps over 100 connections from one load generator process,
// latency from each request's scheduled start), memory after the open loop, then a saturated closed loop
// over 32 connections; and the same loops client → app with no proxy (the "direct" path, for "added").
// The configs run in a different order each run. Memory is read as bench.ts reads it (proc.ts).
//
//   npx tsx bench/proxy/floor.ts [--runs 5] [--seconds 10] [--warmup-seconds 5] [--sat-seconds 5]
//     [--rate 1000] [--configs node,shipped,young-1mb,lite] [--out bench/proxy/floor-last-run.json]
//   npx tsx bench/proxy/floor.ts --table <run file>   (the table of a run file made before)
//
// Loopback only, no cluster and no root needed. The proxy image's environment (MALLOC_ARENA_MAX) is set
// for the floor processes as for the bench's minimesh pair.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { makeTestCert } from '@minimesh/test-support/tls';
import { proxyImageEnv } from './image-env.js';
import { memMb, procStat } from './proc.js';
import { waitLine } from './wait-line.js';
import { spread, type Phase, type Sat } from './table.js';

const ROOT = join(import.meta.dirname, '..', '..');
const here = join(ROOT, 'bench/proxy');

/**
 * V8 settings the floor pair runs with. `shipped` is what minimesh-proxy runs with (its heap-start.ts and
 * main.ts's heap limits: young generation capped at 2 × 4 MiB, old generation grown 30 % over live);
 * `young-1mb` and `lite` trade CPU for memory further than minimesh-proxy does.
 */
const YOUNG_1MB = ['--max-semi-space-size=1', '--semi-space-growth-factor=1', '--heap-growing-percent=30'];
const CONFIGS: Record<string, string[]> = {
  node: [],
  shipped: ['--max-semi-space-size=4', '--semi-space-growth-factor=1', '--heap-growing-percent=30'],
  'young-1mb': YOUNG_1MB,
  lite: ['--lite-mode', ...YOUNG_1MB],
};

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '10' },
    'warmup-seconds': { type: 'string', default: '5' },
    'sat-seconds': { type: 'string', default: '5' },
    rate: { type: 'string', default: '1000' },
    configs: { type: 'string', default: Object.keys(CONFIGS).join(',') },
    out: { type: 'string', default: join(here, 'floor-last-run.json') },
    /** Print the table of a run file made before, and measure nothing. */
    table: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  const text = readFileSync(new URL(import.meta.url), 'utf8').split('\n');
  process.stdout.write(
    text
      .slice(
        0,
        text.findIndex((l) => l.startsWith('import ')),
      )
      .join('\n') + '\n',
  );
  process.exit(0);
}
/** A whole number at least `min`, or an error naming the flag and what it expects. */
function whole(flag: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag}: "${text}" is not a whole number of at least ${min}`);
  return n;
}
const RUNS = whole('runs', args.runs!, 1);
const SECONDS = whole('seconds', args.seconds!, 1);
const WARMUP = whole('warmup-seconds', args['warmup-seconds']!, 1);
const SAT_SECONDS = whole('sat-seconds', args['sat-seconds']!, 1);
const RATE = whole('rate', args.rate!, 1);
const configs = args.configs!.split(',').map((c) => c.trim());
for (const c of configs)
  if (!Object.hasOwn(CONFIGS, c))
    throw new Error(
      `--configs: "${c}" is not a config: expected a comma-separated list of ${Object.keys(CONFIGS).join(', ')}`,
    );
const CONNS = 100;
const SAT_CONNS = 32;
const HOST = 'bench-floor:80';
const ENV = { ...process.env, ...proxyImageEnv(ROOT) };

interface Side {
  rss: number;
  anon: number;
  priv: number;
}
interface FloorRun {
  config: string;
  flags: string[];
  idle: { outbound: Side; inbound: Side };
  loaded: { outbound: Side; inbound: Side };
  /** CPU seconds per 1,000 requests of the open loop (cores per 1,000 rps). */
  cpuPer1k: { outbound: number; inbound: number };
  warm: Phase;
  open: Phase;
  sat: Sat;
}
interface Run {
  direct: { open: Phase; sat: Sat };
  floor: FloorRun[];
}

const children = new Set<ChildProcess>();
function start(argv: string[], env: NodeJS.ProcessEnv = ENV): ChildProcess & { log: () => string } {
  const child = spawn(process.execPath, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  children.add(child);
  child.once('exit', () => children.delete(child));
  return Object.assign(child, { log: () => log });
}
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}
const portOf = async (child: ChildProcess) => Number((await waitLine(child, 'port ', 10_000)).slice(5));

/** The warm-up, then (after `between`) the measured open loop, in one generator process on the same connections. */
async function warmThenOpen<B>(port: number, between: () => B): Promise<{ warm: Phase; open: Phase; between: B }> {
  const gen = start(
    [
      join(here, 'loadgen.mjs'),
      'open',
      '127.0.0.1',
      String(port),
      HOST,
      String(RATE),
      String(SECONDS),
      String(CONNS),
      String(WARMUP),
    ],
    process.env,
  );
  const warm = JSON.parse(await waitLine(gen, '{"phase":"warm"', (WARMUP + 60) * 1000)) as Phase;
  const b = between();
  gen.kill('SIGUSR2');
  const open = JSON.parse(await waitLine(gen, '{"phase":"open"', (SECONDS + 60) * 1000)) as Phase;
  await new Promise((r) => (gen.exitCode === null ? gen.once('exit', r) : r(undefined)));
  return { warm, open, between: b };
}
async function closed(port: number): Promise<Sat> {
  const gen = start(
    [join(here, 'loadgen.mjs'), 'closed', '127.0.0.1', String(port), HOST, String(SAT_SECONDS), String(SAT_CONNS)],
    process.env,
  );
  return JSON.parse(await waitLine(gen, '{', (SAT_SECONDS + 60) * 1000)) as Sat;
}

/** Self-signed P-256 certificates for the two sides (each trusts the other's). */
function certificates(dir: string) {
  const make = (name: 'outbound' | 'inbound') => {
    const c = makeTestCert({ dir, name, cn: name });
    return { cert: c.certFile, key: c.keyFile };
  };
  return { outbound: make('outbound'), inbound: make('inbound') };
}
type Certs = ReturnType<typeof certificates>;

/** One side of the floor pair with these V8 flags, sending to `nextPort`; resolves once it listens. */
async function startSide(flags: string[], role: 'outbound' | 'inbound', nextPort: number, certs: Certs) {
  const peer = role === 'outbound' ? 'inbound' : 'outbound';
  const child = start([
    ...flags,
    join(here, 'floor-proxy.mjs'),
    role,
    '0',
    String(nextPort),
    certs[role].cert,
    certs[role].key,
    certs[peer].cert,
  ]);
  return { child, port: await portOf(child) };
}

async function measureFloor(config: string, appPort: number, certs: Certs): Promise<FloorRun> {
  const flags = CONFIGS[config]!;
  const { child: inbound, port: inPort } = await startSide(flags, 'inbound', appPort, certs);
  try {
    const { child: outbound, port: outPort } = await startSide(flags, 'outbound', inPort, certs);
    try {
      await new Promise((r) => setTimeout(r, 1000));
      const idle = { outbound: memMb(outbound.pid!), inbound: memMb(inbound.pid!) };
      const {
        warm,
        open,
        between: cpu0,
      } = await warmThenOpen(outPort, () => ({
        outbound: procStat(outbound.pid!).cpu,
        inbound: procStat(inbound.pid!).cpu,
      }));
      const loaded = { outbound: memMb(outbound.pid!), inbound: memMb(inbound.pid!) };
      const per1k = (cpu: number) => cpu / (open.sent / 1000);
      const cpuPer1k = {
        outbound: per1k(procStat(outbound.pid!).cpu - cpu0.outbound),
        inbound: per1k(procStat(inbound.pid!).cpu - cpu0.inbound),
      };
      const sat = await closed(outPort);
      if (open.errors > 0 || warm.errors > 0 || sat.errors > 0)
        throw new Error(
          `the ${config} floor pair failed requests (warm-up ${warm.errors}, open ${open.errors}, saturated ${sat.errors}): ${outbound.log().slice(-500)} ${inbound.log().slice(-500)}`,
        );
      return { config, flags, idle, loaded, cpuPer1k, warm, open, sat };
    } finally {
      await stop(outbound);
    }
  } finally {
    await stop(inbound);
  }
}

function renderFloor(file: { date: string; commit: string; load: number; runs: Run[] }): string {
  const rows: string[] = [
    `floor of a Node proxy pair, ${file.runs.length} run(s), ${file.date}, commit ${file.commit}, load ${file.load.toFixed(2)} at start`,
    '',
    '| config | RSS loaded, out / in (MB) | of it anonymous, out / in | USS loaded, out / in (MB) | RSS idle, out / in | added p50 (ms) | added p99 (ms) | CPU per 1k rps, out / in (core) | saturated (rps) |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  const names = [...new Set(file.runs.flatMap((r) => r.floor.map((f) => f.config)))];
  for (const name of names) {
    const fs = file.runs.flatMap((r) => r.floor.filter((f) => f.config === name).map((f) => ({ f, d: r.direct })));
    const col = (pick: (x: (typeof fs)[number]) => number, digits = 1) => spread(fs.map(pick), digits);
    rows.push(
      `| ${name} | ${col((x) => x.f.loaded.outbound.rss)} / ${col((x) => x.f.loaded.inbound.rss)} | ${col((x) => x.f.loaded.outbound.anon)} / ${col((x) => x.f.loaded.inbound.anon)} | ${col((x) => x.f.loaded.outbound.priv)} / ${col((x) => x.f.loaded.inbound.priv)} | ${col((x) => x.f.idle.outbound.rss)} / ${col((x) => x.f.idle.inbound.rss)} | ${col((x) => x.f.open.p50 - x.d.open.p50, 2)} | ${col((x) => x.f.open.p99 - x.d.open.p99, 2)} | ${col((x) => x.f.cpuPer1k.outbound, 3)} / ${col((x) => x.f.cpuPer1k.inbound, 3)} | ${col((x) => x.f.sat.rps, 0)} |`,
    );
  }
  const d = file.runs.map((r) => r.direct);
  rows.push(
    '',
    `direct (no proxies): p50 ${spread(
      d.map((x) => x.open.p50),
      2,
    )} ms, p99 ${spread(
      d.map((x) => x.open.p99),
      2,
    )} ms, saturated ${spread(
      d.map((x) => x.sat.rps),
      0,
    )} rps`,
  );
  return rows.join('\n') + '\n';
}

if (args.table) {
  let file: Parameters<typeof renderFloor>[0];
  try {
    file = JSON.parse(readFileSync(args.table, 'utf8')) as typeof file;
  } catch (err) {
    throw new Error(`--table: ${args.table} is not a run file of floor.ts: ${(err as Error).message}`);
  }
  process.stdout.write(renderFloor(file));
  process.exit(0);
}
const dir = mkdtempSync(join(tmpdir(), 'mm-floor-'));
const cleanup = async () => {
  await Promise.all([...children].map(stop));
  rmSync(dir, { recursive: true, force: true });
};
process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
try {
  const certs = certificates(dir);
  const app = start([join(here, 'server.mjs'), '127.0.0.1', '0'], process.env);
  const appPort = await portOf(app);
  const load = loadavg()[0]!;
  const date = new Date().toISOString();
  const commit = spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const runs: Run[] = [];
  for (let i = 0; i < RUNS; i++) {
    const order = configs.map((_, k) => configs[(k + i) % configs.length]!);
    const floor: FloorRun[] = [];
    for (const config of order) {
      const t0 = Date.now();
      floor.push(await measureFloor(config, appPort, certs));
      const f = floor.at(-1)!;
      console.log(
        `run ${i + 1}/${RUNS} ${config}: USS loaded ${f.loaded.outbound.priv.toFixed(1)} / ${f.loaded.inbound.priv.toFixed(1)} MB, RSS ${f.loaded.outbound.rss.toFixed(1)} / ${f.loaded.inbound.rss.toFixed(1)} MB, p50 ${f.open.p50.toFixed(2)} ms (${((Date.now() - t0) / 1000).toFixed(0)} s)`,
      );
    }
    const direct = await warmThenOpen(appPort, () => undefined);
    runs.push({ direct: { open: direct.open, sat: await closed(appPort) }, floor });
  }
  const file = {
    date,
    commit,
    load,
    node: process.version,
    rate: RATE,
    seconds: SECONDS,
    runs,
  };
  writeFileSync(args.out!, JSON.stringify(file, null, 1) + '\n');
  process.stdout.write('\n' + renderFloor(file) + `\nraw per-run numbers: ${args.out}\n`);
} finally {
  await cleanup();
}
