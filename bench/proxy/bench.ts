// minimesh-proxy side by side with linkerd2-proxy, in one run, on the real path:
//   client → outbound proxy → mTLS → inbound proxy → app
// in network namespaces with proxy-init's real iptables rules, both pairs against the same control
// plane (minimesh identity, destination and policy, on the local cluster's API server) and the same load
// generator, against the same client → app path without proxies (the direct baseline, for "added").
// HTTP/1.1 keep-alive, small bodies: after a warm-up at the same load (5 s; its latency is the cold-start
// row), 1,000 rps open loop (--rate) over 100 connections (latency from each request's scheduled start; one
// generator process and the same connections for warm-up and loop, the direct path's too), then a
// saturated closed loop over 32 connections. linkerd2-proxy runs with
// LINKERD2_PROXY_CORES=1 (one thread: the fair match for one Node event loop). The minimesh proxy runs as it
// ships in its image: the bundle of scripts/bundle.mjs (packages/proxy/bundle/main.mjs, made when missing
// or older than dist/main.js); --proxy <file> runs another entry (e.g. packages/proxy/dist/main.js).
// Variants of the minimesh pair in the same run (--variants, default all; each its own pods and Service),
// reported as ratios against the minimesh pair (tap off; policy controller on, no HTTPRoute):
//   tap-enabled   the tap server configured (MINIMESH_PROXY_TAP_SVC_NAME), nobody observing;
//   tap-observed  the same, with a live reader (tap-reader.mjs, the tap service's mTLS identity) on both proxies;
//   route-timeout an HTTPRoute on the Service whose rules carry request timeouts (the outbound route layer);
//   route-retry   the same HTTPRoute with a retry policy (retry.minimesh.io/*), when this proxy has retries;
//   no-outbound-policy the outbound proxy without a policy controller (no OutboundPolicy at all).
//
//   npm run bench -w @minimesh/proxy [-- --linkerd2-proxy <binary>] [--runs 3] [--seconds 10] [--out <file>]
//     [--warmup-seconds 5] [--rate 1000] [--syscalls] [--pin none | one-cpu | split]
//     [--variants tap-enabled,tap-observed,route-timeout,route-retry,no-outbound-policy | none]
//
// The peer comes from --linkerd2-proxy, MINIMESH_BENCH_LINKERD2_PROXY, or /opt/minimesh-peers/linkerd2-proxy;
// without it its columns say "not measured". --syscalls also counts each proxy's system calls and context
// switches during the open loop (perf stat on the kernel's tracepoints; syscalls.ts). Raw per-run numbers
// go to a JSON file (default bench/proxy/last-run.json); the table is made from that file (table.ts). As
// root; it uses the local cluster (on a shared machine: flock /tmp/minimesh-cluster.lock).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { adminClient } from '@minimesh/local-cluster';
import { policyCrds } from '@minimesh/policy';
import { NetnsMesh, PROXY_UID, ROOT, findLinkerd2Proxy } from '../../packages/proxy/test/support/netns-mesh.js';
import { policyServer } from '../../packages/proxy/test/support/policy-server.js';
import {
  PLACEMENTS,
  VARIANTS,
  renderTable,
  renderVariants,
  type BenchFile,
  type PairKind,
  type PairRun,
  type Phase,
  type Placement,
  type PlacedRole,
  type Run,
  type Sat,
  type Variant,
} from './table.js';
import { assignments, proxyImageEnv } from './image-env.js';
import { countFrom, syscallCountingUnavailable } from './syscalls.js';
import { memMb, procStat } from './proc.js';
import { waitLine } from './wait-line.js';

/** A variant's check failed (its route is not in force): the pair is not measured in that run. */
class CheckFailed extends Error {
  constructor(
    message: string,
    readonly context: string,
  ) {
    super(message);
  }
}

const here = join(ROOT, 'bench/proxy');
const { values: args } = parseArgs({
  options: {
    'linkerd2-proxy': { type: 'string' },
    runs: { type: 'string', default: process.env.BENCH_RUNS ?? '3' },
    seconds: { type: 'string', default: process.env.BENCH_SECONDS ?? '10' },
    /**
     * The open loop's rate, requests a second (warm-up and measured loop); the goals are stated at 1,000.
     * Its own variable, not BENCH_RATE: `npm run bench` also runs the injector's bench, whose rate that sets.
     */
    rate: { type: 'string', default: process.env.BENCH_PROXY_RATE ?? '1000' },
    'sat-seconds': { type: 'string', default: process.env.BENCH_SAT_SECONDS ?? '5' },
    /** Each pair first serves the open loop's load this long, outside the measured windows (see WARMUP_SECONDS). */
    'warmup-seconds': { type: 'string', default: process.env.BENCH_WARMUP_SECONDS ?? '5' },
    out: { type: 'string', default: join(here, 'last-run.json') },
    /** The minimesh proxy's entry (default: its bundle, as in the image). */
    proxy: { type: 'string', default: process.env.BENCH_PROXY_MAIN },
    /** Another build of the proxy (a dir with main.mjs, a bundle, or main.js, a dist/), measured as a third pair: before/after in one run. */
    'ab-dist': { type: 'string', default: process.env.BENCH_AB_DIST },
    /**
     * Environment for the --ab-dist pair only, "NAME=value NAME=value", over the image's (IMAGE_ENV): a
     * runtime setting measured against the image's, e.g. "MALLOC_ARENA_MAX=0" for glibc's default.
     */
    'ab-env': { type: 'string', default: process.env.BENCH_AB_ENV ?? '' },
    'skip-minimesh': { type: 'boolean', default: false },
    /** Node flags for the minimesh proxies (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"); they then stop with SIGTERM. */
    'proxy-node-args': { type: 'string', default: process.env.BENCH_PROXY_NODE_ARGS ?? '' },
    /** Variants of the minimesh pair (comma-separated), or "none". */
    variants: { type: 'string', default: process.env.BENCH_VARIANTS ?? VARIANTS.join(',') },
    /** Count each proxy's system calls and context switches during the open loop (needs perf; syscalls.ts). */
    syscalls: { type: 'boolean', default: false },
    /** Where the proxies run: none (the kernel decides), one-cpu or split (see PLACEMENTS). */
    pin: { type: 'string', default: process.env.BENCH_PROXY_PIN ?? 'none' },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  process.stdout.write(
    readFileSync(new URL(import.meta.url))
      .toString()
      .split('\n')
      .filter((_, i, lines) => i < lines.findIndex((l) => l.startsWith('import ')))
      .join('\n') + '\n',
  );
  process.exit(0);
}
const RUNS = Number(args.runs);
const variants = args.variants === 'none' ? [] : args.variants!.split(',').map((v) => v.trim());
for (const v of variants)
  if (!(VARIANTS as readonly string[]).includes(v))
    throw new Error(
      `--variants: "${v}" is not a variant: expected a comma-separated list of ${VARIANTS.join(', ')}, or none`,
    );
if (variants.length > 0 && args['skip-minimesh'])
  throw new Error('--variants: the variants are measured against the minimesh pair, which --skip-minimesh leaves out');
const nodeArgs = args['proxy-node-args']!.split(' ').filter(Boolean);
if (args.syscalls) {
  const why = syscallCountingUnavailable();
  if (why) throw new Error(`--syscalls: ${why}`);
}
const SECONDS = Number(args.seconds);
const SAT_SECONDS = Number(args['sat-seconds']);
/**
 * The warm-up: the open loop's rate and connections for this long after the pair is ready, before the
 * measured windows. A Node proxy runs its first few thousand requests in code V8 has not optimized yet
 * (2026-11-29: after 1 s at 200 rps, the first 1.3–1.7 s of the measured loop held the whole p99 at
 * 60–200 ms, the rest stayed under 21 ms); linkerd2-proxy, compiled ahead of time, has no such phase.
 * The warm-up's own latency is kept (`warm`) and tabled as the cold-start figure, so neither is hidden.
 */
const WARMUP_SECONDS = Number(args['warmup-seconds']);
if (!(WARMUP_SECONDS >= 1))
  throw new Error(`--warmup-seconds: "${args['warmup-seconds']}" is not a number of seconds, at least 1`);
/**
 * Placements (--pin; table.ts PLACEMENTS), each process with all its threads by taskset (util-linux) as it
 * starts. none leaves them to the kernel, as a real node does (the default, and the proxy README's table);
 * one-cpu has a pair's two proxies share one CPU, as sidecars do on a busy node. What pinning changes:
 * docs/proxy.md, "Where the kernel puts the proxies".
 */
const PIN = args.pin as Placement;
if (!Object.hasOwn(PLACEMENTS, PIN))
  throw new Error(`--pin: "${args.pin}" is not one of ${Object.keys(PLACEMENTS).join(', ')}`);
if (PIN !== 'none') {
  if (cpus().length < 2)
    throw new Error(`--pin ${PIN}: it needs at least 2 CPUs, and this machine has ${cpus().length}`);
  const t = spawnSync('taskset', ['-c', '0', 'true'], { encoding: 'utf8' });
  if (t.status !== 0)
    throw new Error(`--pin ${PIN}: taskset (util-linux) cannot run here: ${t.error?.message ?? t.stderr.trim()}`);
}
/** `argv` started on the CPU --pin gives a process of this role (unchanged when it gives none). */
function placed(role: PlacedRole, argv: string[]): string[] {
  const cpu = PLACEMENTS[PIN].cpu[role];
  if (cpu === undefined) return argv;
  return ['taskset', '-c', String(cpu === 'last' ? cpus().length - 1 : cpu), ...argv];
}
const RATE = Number(args.rate);
if (!(Number.isInteger(RATE) && RATE >= 1))
  throw new Error(`--rate: "${args.rate}" is not a whole number of requests a second, at least 1`);
const CONNS = 100;
const SAT_CONNS = 32;
const APP_PORT = 8080;
/** prom-client's event-loop monitor resolution (its default). */
const LAG_RESOLUTION_MS = 10;
const DIST_MAIN = join(ROOT, 'packages/proxy/dist/main.js');
const BUNDLE_MAIN = join(ROOT, 'packages/proxy/bundle/main.mjs');
if (!existsSync(DIST_MAIN)) throw new Error(`${DIST_MAIN} is missing: npm run build`);
if (!args.proxy && (!existsSync(BUNDLE_MAIN) || statSync(BUNDLE_MAIN).mtimeMs < statSync(DIST_MAIN).mtimeMs)) {
  console.log('bundling the proxy as its image does (node scripts/bundle.mjs proxy)');
  const b = spawnSync(process.execPath, [join(ROOT, 'scripts/bundle.mjs'), 'proxy'], { cwd: ROOT, encoding: 'utf8' });
  if (b.status !== 0) throw new Error(`node scripts/bundle.mjs proxy failed (${b.status}): ${b.stderr || b.stdout}`);
}
const MINIMESH_MAIN = args.proxy ?? BUNDLE_MAIN;
if (!existsSync(MINIMESH_MAIN)) throw new Error(`--proxy: ${MINIMESH_MAIN} does not exist`);
/** The --ab-dist build's entry: its bundle (main.mjs) or its dist/ (main.js). */
function abMain(dir: string): string {
  const entry = ['main.mjs', 'main.js'].map((f) => join(dir, f)).find((f) => existsSync(f));
  if (!entry) throw new Error(`--ab-dist: ${dir} has neither main.mjs (a bundle) nor main.js (a dist/)`);
  return entry;
}
const ADDON = join(ROOT, 'packages/proxy/native/build/Release/original_dst.node');
/** What the proxy image sets for the runtime (the Dockerfile's proxy stage: MALLOC_ARENA_MAX), for every minimesh pair. */
const IMAGE_ENV = proxyImageEnv(ROOT);
/** `--ab-env`: the A/B pair's environment over the image's. */
const AB_ENV = assignments(args['ab-env']!, '--ab-env');
/** The route-retry variant's retry policy (Linkerd's retry.linkerd.io/* annotations, minimesh's group). */
const RETRY_ANNOTATIONS = {
  'retry.minimesh.io/http': '5xx',
  'retry.minimesh.io/limit': '2',
  'retry.minimesh.io/timeout': '2s',
};
/**
 * The proxy's retry transport: present once route retries are in this checkout (http/retry.js; before
 * 2026-11-28 it was policy/outbound-retry.js, which older checkouts still have).
 */
const RETRY_LAYER =
  ['packages/proxy/dist/http/retry.js', 'packages/proxy/dist/policy/outbound-retry.js']
    .map((p) => join(ROOT, p))
    .find((p) => existsSync(p)) ?? join(ROOT, 'packages/proxy/dist/http/retry.js');

const peerArg = args['linkerd2-proxy'];
const peer = findLinkerd2Proxy(peerArg, 'MINIMESH_BENCH_LINKERD2_PROXY');
const policy = policyServer();
let peerReason: string | undefined;
if (!peer)
  peerReason = peerArg
    ? `not measured: ${peerArg} does not exist`
    : 'not measured: no linkerd2-proxy binary (--linkerd2-proxy, MINIMESH_BENCH_LINKERD2_PROXY or /opt/minimesh-peers/linkerd2-proxy)';
else if (!policy.argv) peerReason = `not measured: linkerd2-proxy needs a policy server, and ${policy.reason}`;

function commit(): string {
  const r = spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  const dirty = spawnSync('git', ['-C', ROOT, 'status', '--porcelain', '--', 'packages/proxy/src'], {
    encoding: 'utf8',
  }).stdout.trim();
  return `${r.stdout.trim()}${dirty ? '+dirty' : ''}`;
}

const mesh = await NetnsMesh.create('mmb');
/** CRDs this bench put back after another user of the shared cluster deleted them (removed again at the end). */
const restoredCrds: string[] = [];
/** Route variants whose HTTPRoute this run made (a later absence means someone deleted it). */
const routeMade = new Set<string>();
const cleanup = async () => {
  await mesh.destroy();
  for (const path of restoredCrds.splice(0))
    await adminClient()
      .request('DELETE', path)
      .catch(() => undefined);
};
process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));

/** The pairs this run measures, each with its own client and server pods and Service. */
interface Pair {
  kind: PairKind;
  main?: string;
  /** Added to both proxies' environment. */
  env?: Record<string, string>;
  /** The outbound proxy runs without a policy controller. */
  noOutboundPolicy?: boolean;
  /** A live tap reader observes both proxies during the measurement. */
  observe?: boolean;
}
/** The tap service's identity (a service account of the bench's namespace): the only caller the proxies accept. */
const tapSvcName = () => mesh.idOf('minimesh-tap');
const pairs: Pair[] = [];
if (!args['skip-minimesh']) pairs.push({ kind: 'minimesh', main: MINIMESH_MAIN });
if (args['ab-dist']) pairs.push({ kind: 'minimesh-ab', main: abMain(args['ab-dist']), env: AB_ENV });
else if (Object.keys(AB_ENV).length > 0)
  throw new Error('--ab-env: it sets the environment of the --ab-dist pair, and no --ab-dist is given');
if (peer && policy.argv) pairs.push({ kind: 'linkerd2' });
/** Variants that cannot run here, and why (the table says so). */
const notMeasured: Partial<Record<Variant, string>> = {};
for (const v of variants as Variant[]) {
  const needsPolicy = v !== 'tap-enabled' && v !== 'tap-observed';
  if (needsPolicy && !policy.argv) {
    notMeasured[v] = `not measured: ${policy.reason}`;
    continue;
  }
  if (v === 'route-retry' && !existsSync(RETRY_LAYER)) {
    notMeasured[v] =
      `not measured: this checkout's minimesh-proxy applies no route retries (${RETRY_LAYER} is missing)`;
    continue;
  }
  const tapEnv = { MINIMESH_PROXY_TAP_SVC_NAME: tapSvcName() };
  if (v === 'tap-enabled') pairs.push({ kind: v, main: MINIMESH_MAIN, env: tapEnv });
  if (v === 'tap-observed') pairs.push({ kind: v, main: MINIMESH_MAIN, env: tapEnv, observe: true });
  if (v === 'route-timeout' || v === 'route-retry') pairs.push({ kind: v, main: MINIMESH_MAIN });
  if (v === 'no-outbound-policy') pairs.push({ kind: v, main: MINIMESH_MAIN, noOutboundPolicy: true });
}
/** The policy controller runs when the peer or a route variant needs it; then every minimesh proxy uses it. */
const runPolicy =
  policy.argv !== undefined &&
  pairs.some((p) => ['linkerd2', 'route-timeout', 'route-retry', 'no-outbound-policy'].includes(p.kind));
/** The HTTPRoute of the route-timeout variant: /delay/* cut at 100 ms (the check), the rest given 10 s (the cost). */
const ROUTE_CHECK_TIMEOUT_MS = 100;
/** How long a route variant's check waits for its route to be in force in the outbound proxy. */
const CHECK_MS = 45_000;

try {
  // --- pods, services, apps, control plane ---
  await mesh.addPod('direct-c', 'client', { meshed: false });
  await mesh.addPod('direct-s', 'server', { meshed: false });
  const svcIp: Record<string, string> = {};
  for (const p of pairs) {
    await mesh.addPod(`${p.kind}-c`, 'client');
    await mesh.addPod(`${p.kind}-s`, 'server');
    svcIp[p.kind] = await mesh.service(
      `bench-${p.kind}`,
      [{ name: 'http', port: 80, targetPort: APP_PORT }],
      [`${p.kind}-s`],
    );
  }
  if (pairs.some((p) => p.observe)) await mesh.addPod('tap-reader', 'minimesh-tap', { meshed: false });
  await mesh.startControlPlane({ policy: runPolicy ? policy.argv : undefined });
  for (const p of pairs) if (p.kind === 'route-timeout' || p.kind === 'route-retry') await ensureRoute(p.kind);
  const tapCert = pairs.some((p) => p.observe) ? await writeTapCert() : undefined;
  for (const name of ['direct-s', ...pairs.map((p) => `${p.kind}-s`)]) {
    const app = mesh.start(
      `app-${name}`,
      placed('load', [process.execPath, join(here, 'server.mjs'), '0.0.0.0', String(APP_PORT)]),
      { pod: name },
    );
    await waitLine(app, 'port ');
  }
  for (const p of pairs) {
    await mesh.meshPod(`${p.kind}-c`);
    await mesh.meshPod(`${p.kind}-s`);
  }

  const file: BenchFile = {
    date: new Date().toISOString(),
    commit: commit(),
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? '',
    loadavg: loadavg(),
    config: {
      rate: RATE,
      conns: CONNS,
      seconds: SECONDS,
      satConns: SAT_CONNS,
      satSeconds: SAT_SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      runs: RUNS,
      pin: PIN,
    },
    peer: peer && policy.argv ? { path: peer } : { reason: peerReason ?? 'not measured' },
    policyController: runPolicy,
    variants: {
      measured: pairs.flatMap((p) => ((VARIANTS as readonly string[]).includes(p.kind) ? [p.kind] : [])),
      notMeasured,
    },
    env: { image: IMAGE_ENV, ...(args['ab-dist'] ? { ab: AB_ENV } : {}) },
    runs: [],
  };

  for (let i = 0; i < RUNS; i++) {
    const run: Run = { index: i, loadavg: loadavg(), direct: undefined as unknown as Run['direct'], pairs: {} };
    // Rotate the order each run so drift on a shared machine does not always favour the same pair.
    const order: Array<'direct' | (typeof pairs)[number]> = ['direct', ...pairs];
    for (let k = 0; k < i % order.length; k++) order.push(order.shift()!);
    for (const step of order) {
      if (step === 'direct') {
        const ip = mesh.pod('direct-s').ip;
        run.direct = {
          // The same warm-up as every pair's, so the generator is as warm here as there.
          open: (
            await warmThenOpen(
              'direct-c',
              ['open', ip, APP_PORT, `${ip}:${APP_PORT}`, RATE, SECONDS, CONNS],
              WARMUP_SECONDS,
              () => undefined,
            )
          ).open,
          sat: await loadgen<Sat>('direct-c', ['closed', ip, APP_PORT, `${ip}:${APP_PORT}`, SAT_SECONDS, SAT_CONNS]),
        };
      } else {
        try {
          run.pairs[step.kind] = await measurePair(step, svcIp[step.kind]!, tapCert);
        } catch (err) {
          // A variant whose check failed is left out of this run (and says why); the other pairs go on.
          if (!(err instanceof CheckFailed)) throw err;
          (run.failed ??= {})[step.kind] = err.message;
          process.stderr.write(`run ${i + 1}/${RUNS} ${step.kind}: ${err.message}\n${err.context}\n`);
        }
      }
      process.stderr.write(`run ${i + 1}/${RUNS} ${step === 'direct' ? 'direct' : step.kind} done\n`);
    }
    file.runs.push(run);
    writeFileSync(args.out!, JSON.stringify(file, null, 2) + '\n');
  }
  writeFileSync(args.out!, JSON.stringify(file, null, 2) + '\n');
  process.stdout.write(renderTable(file));
  process.stdout.write(renderVariants(file));
  process.stdout.write(`\nraw per-run numbers: ${args.out}\n`);
} finally {
  await cleanup();
}

async function measurePair(pair: Pair, clusterIp: string, tapCert?: TapCert): Promise<PairRun> {
  const cName = `${pair.kind}-c`;
  const sName = `${pair.kind}-s`;
  const host = `${mesh.fqdn(`bench-${pair.kind}`)}:80`;
  const restored =
    pair.kind === 'route-timeout' || pair.kind === 'route-retry' ? await ensureRoute(pair.kind) : undefined;
  const server = await startProxy(pair, sName);
  const client = await startProxy(pair, cName);
  const readerKey = 'tap-reader';
  try {
    await new Promise((r) => setTimeout(r, 1000));
    const idle = { client: memMb(client.pid), server: memMb(server.pid) };
    const minimesh = pair.kind !== 'linkerd2';
    let reader: { pid: number; log: () => string } | undefined;
    if (pair.observe) {
      const targets = [cName, sName].map((p) => `${mesh.pod(p).ip}:4190=${mesh.pod(p).identity}`);
      const child = mesh.start(
        readerKey,
        [process.execPath, join(here, 'tap-reader.mjs'), tapCert!.cert, tapCert!.key, tapCert!.anchors, ...targets],
        { pod: 'tap-reader' },
      );
      await waitLine(child, 'observing ').catch((err: Error) => {
        throw new Error(`tap reader: ${err.message}\n${mesh.logOf(readerKey).slice(-1500)}`);
      });
      reader = { pid: child.pid!, log: () => child.log?.() ?? '' };
    }
    // Warm-up (first connections, discovery, the multiplexed mTLS session, V8's optimizing compiler),
    // outside the measured windows; its latency is the cold-start figure. Then the measured open loop in
    // the same generator process, on the same connections.
    const { warm, open, between } = await warmThenOpen(
      cName,
      ['open', clusterIp, 80, host, RATE, SECONDS, CONNS],
      WARMUP_SECONDS,
      async () => {
        const route =
          pair.kind === 'route-timeout' || pair.kind === 'route-retry'
            ? {
                ...(await checkRoute(cName, clusterIp, host, pair.kind === 'route-retry')),
                ...(restored ? { restored } : {}),
              }
            : undefined;
        // Scraping resets the event-loop delay histograms; GC is counted from here.
        const before = minimesh ? { client: scrape(cName), server: scrape(sName) } : undefined;
        const cpu0 = { client: procStat(client.pid), server: procStat(server.pid) };
        const readerCpu0 = reader ? procStat(reader.pid).cpu : 0;
        const counting = args.syscalls ? { client: countFrom(client.pid), server: countFrom(server.pid) } : undefined;
        return { route, before, cpu0, readerCpu0, counting };
      },
    );
    const { route, before, cpu0, readerCpu0, counting } = between;
    const cpu1 = { client: procStat(client.pid), server: procStat(server.pid) };
    const counted = counting ? { client: await counting.client(), server: await counting.server() } : undefined;
    // CPU seconds per 1,000 requests sent (= cores per 1,000 rps): right also when the pair fell behind the
    // schedule and the phase took longer than SECONDS (then fewer than RATE requests a second went through).
    const per1k = (cpu: number) => cpu / (open.sent / 1000);
    const perRequest = (n: number) => n / open.sent;
    const readerCpuPer1k = reader ? per1k(procStat(reader.pid).cpu - readerCpu0) : undefined;
    const loaded = { client: memMb(client.pid), server: memMb(server.pid) };
    const runtime = before
      ? { client: during(before.client, scrape(cName)), server: during(before.server, scrape(sName)) }
      : undefined;
    const c0 = { client: procStat(client.pid).cpu, server: procStat(server.pid).cpu };
    const s0 = performance.now();
    const sat = await loadgen<Sat>(cName, ['closed', clusterIp, 80, host, SAT_SECONDS, SAT_CONNS]);
    const satSecs = (performance.now() - s0) / 1000;
    let tap: PairRun['tap'];
    if (reader) {
      await mesh.stop(readerKey, 'SIGTERM');
      const out = reader.log();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (!line) throw new Error(`tap reader printed no result: ${out.slice(-1000)}`);
      const r = JSON.parse(line) as { events: number; byTarget: Record<string, number>; errors: string[] };
      if (r.errors.length > 0) throw new Error(`tap reader: ${r.errors.join('; ')}`);
      if (!(r.events > 0)) throw new Error(`tap reader read no events: ${out.slice(-1000)}`);
      // Requests both proxies forwarded while the reader observed: warm-up and open loop (one generator,
      // which first sends one request per connection to warm them) and the closed loop (the same).
      const requests = CONNS + warm.sent + open.sent + sat.ok + sat.errors + SAT_CONNS;
      tap = { events: r.events, requests, readerCpuPer1k: readerCpuPer1k! };
    }
    return {
      ...(tap ? { tap } : {}),
      ...(route ? { route } : {}),
      readyMs: { client: client.readyMs, server: server.readyMs },
      idle,
      loaded,
      warm,
      open,
      cpuPer1k: {
        client: per1k(cpu1.client.cpu - cpu0.client.cpu),
        server: per1k(cpu1.server.cpu - cpu0.server.cpu),
      },
      kernelCpuPer1k: {
        client: per1k(cpu1.client.sys - cpu0.client.sys),
        server: per1k(cpu1.server.sys - cpu0.server.sys),
      },
      ...(counted
        ? {
            perRequest: {
              client: { syscalls: perRequest(counted.client.syscalls), switches: perRequest(counted.client.switches) },
              server: { syscalls: perRequest(counted.server.syscalls), switches: perRequest(counted.server.switches) },
            },
          }
        : {}),
      sat,
      satCpu: {
        client: (procStat(client.pid).cpu - c0.client) / satSecs,
        server: (procStat(server.pid).cpu - c0.server) / satSecs,
      },
      runtime,
    };
  } finally {
    await mesh.stop(readerKey);
    const signal = nodeArgs.length > 0 && pair.kind !== 'linkerd2' ? 'SIGTERM' : 'SIGKILL';
    await mesh.stop(`proxy-${cName}`, signal);
    await mesh.stop(`proxy-${sName}`, signal);
  }
}

async function startProxy(pair: Pair, pod: string): Promise<{ pid: number; readyMs: number }> {
  const key = `proxy-${pod}`;
  const spawnAt = Date.now();
  const role = pod.endsWith('-c') ? 'outbound' : 'inbound';
  const minimeshEnv = (): Record<string, string> => {
    const e = mesh.minimeshEnv(pod, { ...IMAGE_ENV, MINIMESH_ORIGINAL_DST_ADDON: ADDON, ...pair.env });
    if (pair.noOutboundPolicy && role === 'outbound')
      for (const k of Object.keys(e)) if (k.startsWith('MINIMESH_PROXY_POLICY_')) delete e[k];
    return e;
  };
  const linkerd = pair.kind === 'linkerd2';
  const argv = linkerd ? [peer!] : [process.execPath, ...nodeArgs, pair.main!];
  const env = linkerd ? await mesh.linkerdEnv(pod, String(APP_PORT)) : minimeshEnv();
  const child = mesh.start(key, placed(role, argv), { pod, uid: PROXY_UID, env });
  const waiter = mesh.start(
    `ready-${pod}`,
    [process.execPath, join(here, 'wait-ready.mjs'), String(spawnAt), 'http://127.0.0.1:4191/ready'],
    { pod },
  );
  const line = await waitLine(waiter, 'ready ', 65_000).catch((err: Error) => {
    throw new Error(`${pair.kind} proxy in ${pod}: ${err.message}\n${mesh.logOf(key).slice(-2000)}`);
  });
  const readyMs = Number(line.split(' ')[1]);
  if (!(readyMs >= 0))
    throw new Error(`${pair.kind} proxy in ${pod} never became ready:\n${mesh.logOf(key).slice(-2000)}`);
  return { pid: child.pid!, readyMs };
}

interface TapCert {
  cert: string;
  key: string;
  anchors: string;
}

/** The tap service's certificate, minted from the bench's test CA as the proxies' are (readable by the reader). */
async function writeTapCert(): Promise<TapCert> {
  const { certPem, keyPem } = await mesh.pki.leaf(tapSvcName());
  const files = {
    cert: join(mesh.dir, 'tap.crt'),
    key: join(mesh.dir, 'tap.key'),
    anchors: join(mesh.dir, 'tap-ca.crt'),
  };
  writeFileSync(files.cert, certPem);
  writeFileSync(files.key, keyPem, { mode: 0o600 });
  writeFileSync(files.anchors, mesh.pki.anchorPem);
  return files;
}

/**
 * The route variant's HTTPRoute is there, or is made: at setup, and again when another user of the shared
 * cluster deleted the policy.minimesh.io CRDs meanwhile (a `helm uninstall` of the chart does; seen at
 * 10:11 UTC on 2026-11-27, which left a run's route variants without their route). Returns what had to
 * be put back, if anything.
 */
async function ensureRoute(kind: 'route-timeout' | 'route-retry'): Promise<string | undefined> {
  const service = `bench-${kind}`;
  const again = routeMade.has(kind);
  const kube = adminClient();
  const routePath = `/apis/policy.minimesh.io/v1beta3/namespaces/${mesh.kns}/httproutes/${service}`;
  let route: unknown;
  try {
    route = await kube.get(routePath);
  } catch {
    route = undefined; // the group is not served (its CRDs are gone): put them back below
  }
  if (route) return undefined;
  const crdPath = (name: string) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
  const missing: string[] = [];
  for (const crd of policyCrds()) {
    if (await kube.get(crdPath(crd.metadata.name))) continue;
    await kube.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    missing.push(crd.metadata.name);
    restoredCrds.push(crdPath(crd.metadata.name));
  }
  for (let i = 0; i < 100; i++) {
    let ready = true;
    for (const crd of policyCrds()) {
      const c = await kube.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        crdPath(crd.metadata.name),
      );
      if (!(c?.status?.conditions ?? []).some((x) => x.type === 'Established' && x.status === 'True')) ready = false;
    }
    if (ready) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await routeWithTimeouts(service, kind === 'route-retry' ? RETRY_ANNOTATIONS : {});
  const what = missing.length
    ? `the policy.minimesh.io CRDs (${missing.join(', ')}) and the HTTPRoute`
    : 'the HTTPRoute';
  return again ? `${what} had been deleted by another user of the cluster: made again` : undefined;
}

/** An HTTPRoute (policy.minimesh.io, Linkerd's shape) on the Service's port whose rules carry request timeouts. */
async function routeWithTimeouts(service: string, annotations: Record<string, string> = {}): Promise<void> {
  routeMade.add(service.replace(/^bench-/, ''));
  await adminClient().request('POST', `/apis/policy.minimesh.io/v1beta3/namespaces/${mesh.kns}/httproutes`, {
    apiVersion: 'policy.minimesh.io/v1beta3',
    kind: 'HTTPRoute',
    metadata: { name: service, annotations },
    spec: {
      parentRefs: [{ group: 'core', kind: 'Service', name: service, port: 80 }],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/delay' } }],
          timeouts: { request: `${ROUTE_CHECK_TIMEOUT_MS}ms` },
        },
        { matches: [{ path: { type: 'PathPrefix', value: '/' } }], timeouts: { request: '10s' } },
      ],
    },
  });
}

/**
 * The route is in force in the outbound proxy (its policy has arrived): GET /delay/1000 is cut by the
 * /delay rule's timeout (504 well before the app answers); with `retry`, GET /flaky/<new key> (503 from
 * the app the first time) answers 200. Bounded: 45 s (the policy controller retries a watch whose CRD
 * was missing every 30 s), 250 ms between tries.
 */
async function checkRoute(
  pod: string,
  clusterIp: string,
  host: string,
  retry: boolean,
): Promise<{ status: number; ms: number; retried?: number }> {
  type Probe = { status: number; ms: number };
  let last: Probe | undefined;
  let flaky: Probe | undefined;
  const deadline = Date.now() + CHECK_MS;
  for (let i = 0; Date.now() < deadline; i++) {
    last = await loadgen<Probe>(pod, ['probe', clusterIp, 80, host, '/delay/1000']);
    if (last.status === 504 && last.ms < 900) {
      if (!retry) return last;
      flaky = await loadgen<Probe>(pod, ['probe', clusterIp, 80, host, `/flaky/${i}`]);
      if (flaky.status === 200) return { ...last, retried: flaky.status };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  // What the operator needs to tell a slow controller from a dead one or a proxy that never asked.
  const ctl = mesh.procs.get('policy');
  const context = [
    `policy controller: ${ctl && ctl.exitCode === null && ctl.signalCode === null ? 'running' : `exited (${ctl?.exitCode ?? ctl?.signalCode})`}`,
    `policy controller log: ${mesh.logOf('policy').slice(-1500)}`,
    `outbound proxy log: ${mesh.logOf(`proxy-${pod}`).slice(-1500)}`,
  ].join('\n');
  if (retry && last?.status === 504)
    throw new CheckFailed(
      `the HTTPRoute's retry policy was not in force in the outbound proxy after ${CHECK_MS / 1000} s: GET /flaky/<new key> (503 from the app once) answered ${flaky?.status} (expected 200 after a retry)`,
      context,
    );
  throw new CheckFailed(
    `the HTTPRoute's ${ROUTE_CHECK_TIMEOUT_MS} ms timeout was not in force in the outbound proxy after ${CHECK_MS / 1000} s: GET /delay/1000 answered ${last?.status} after ${last?.ms.toFixed(0)} ms (expected 504 within ~${ROUTE_CHECK_TIMEOUT_MS} ms)`,
    context,
  );
}

interface Scrape {
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  gcMs: number;
  gcCount: number;
  gcMajorMs: number;
  /** GC pauses longer than 10 ms (histogram bucket le=0.01). */
  gcOver10: number;
  /** V8 heap spaces (MB committed) and memory held outside the heap (external, array buffers), at this scrape. */
  heapMb: Record<string, number>;
  externalMb: number;
}

/** The minimesh proxy's own process metrics: event-loop delay since the last scrape, GC so far. */
function scrape(pod: string): Scrape {
  const text = mesh.podFetch(pod, 'http://127.0.0.1:4191/metrics').body;
  const num = (re: RegExp) => {
    let sum = 0;
    for (const m of text.matchAll(re)) sum += Number(m[1]);
    return sum;
  };
  return {
    lagP50Ms: num(/^nodejs_eventloop_lag_p50_seconds ([\d.e+-]+)/gm) * 1000,
    lagP99Ms: num(/^nodejs_eventloop_lag_p99_seconds ([\d.e+-]+)/gm) * 1000,
    lagMaxMs: num(/^nodejs_eventloop_lag_max_seconds ([\d.e+-]+)/gm) * 1000,
    gcMs: num(/^nodejs_gc_duration_seconds_sum\{[^}]*\} ([\d.e+-]+)/gm) * 1000,
    gcCount: num(/^nodejs_gc_duration_seconds_count\{[^}]*\} ([\d.e+-]+)/gm),
    gcMajorMs: num(/^nodejs_gc_duration_seconds_sum\{kind="major"\} ([\d.e+-]+)/gm) * 1000,
    gcOver10:
      num(/^nodejs_gc_duration_seconds_count\{[^}]*\} ([\d.e+-]+)/gm) -
      num(/^nodejs_gc_duration_seconds_bucket\{le="0\.01",[^}]*\} ([\d.e+-]+)/gm),
    heapMb: Object.fromEntries(
      [...text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\} ([\d.e+-]+)/gm)].map((m) => [
        m[1]!,
        Number(m[2]) / 2 ** 20,
      ]),
    ),
    externalMb: num(/^nodejs_external_memory_bytes ([\d.e+-]+)/gm) / 2 ** 20,
  };
}

/**
 * Event-loop delay of the phase (the histogram restarts at each scrape) and GC during it. prom-client
 * samples the loop every 10 ms and records the whole interval, so the delay is what exceeds 10 ms.
 */
function during(before: Scrape, after: Scrape): NonNullable<PairRun['runtime']>['client'] {
  const delay = (ms: number) => Math.max(0, ms - LAG_RESOLUTION_MS);
  return {
    lagP50Ms: delay(after.lagP50Ms),
    lagP99Ms: delay(after.lagP99Ms),
    lagMaxMs: delay(after.lagMaxMs),
    gcMs: after.gcMs - before.gcMs,
    gcCount: after.gcCount - before.gcCount,
    gcMajorMs: after.gcMajorMs - before.gcMajorMs,
    gcOver10: after.gcOver10 - before.gcOver10,
    heapMb: after.heapMb,
    externalMb: after.externalMb,
  };
}

/**
 * The open loop after a warm-up in one generator process (loadgen.mjs with a warm-up): the warm-up's
 * result, then `between` (counters read, a route checked) while the connections wait, then the measured
 * loop. One process, so the measured loop starts with a warm generator on connections already open.
 */
async function warmThenOpen<B>(
  pod: string,
  argv: Array<string | number>,
  warmupSeconds: number,
  between: () => Promise<B> | B,
): Promise<{ warm: Phase; open: Phase; between: B }> {
  const gen = startLoadgen(pod, [...argv, warmupSeconds]);
  const warmLine = await waitLine(gen.child, '{"phase":"warm"', (warmupSeconds + 60) * 1000).catch(() => {
    throw gen.fail('gave no warm-up result');
  });
  const b = await between();
  gen.child.kill('SIGUSR2');
  const open = await gen.finished<Phase>('{"phase":"open"');
  return { warm: JSON.parse(warmLine) as Phase, open, between: b };
}

/** One load generator run to its end: its result line. */
function loadgen<T>(pod: string, argv: Array<string | number>): Promise<T> {
  return startLoadgen(pod, argv).finished<T>('{');
}

/** A load generator process in `pod`; `finished` waits for it to exit and returns its line starting with `prefix`. */
function startLoadgen(pod: string, argv: Array<string | number>) {
  const key = `loadgen-${pod}`;
  const child = mesh.start(key, placed('load', [process.execPath, join(here, 'loadgen.mjs'), ...argv.map(String)]), {
    pod,
  });
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  const fail = (what: string) => new Error(`load generator in ${pod} ${what}: ${mesh.logOf(key).slice(-1000)}`);
  return {
    child,
    fail,
    async finished<T>(prefix: string): Promise<T> {
      const code = await exited;
      const line = mesh
        .logOf(key)
        .split('\n')
        .find((l) => l.startsWith(prefix));
      if (code !== 0 || !line) throw fail(`failed (${code})`);
      return JSON.parse(line) as T;
    },
  };
}
