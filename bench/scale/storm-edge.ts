// The restart storm without a cluster: identity's gRPC edge and certifier (as shipped, in a child process
// of its own), its TokenReview answered by a stand-in after BENCH_REVIEW_MS (default 5 ms), and the Go
// storm client of the scale bench (../go-clients identity-certify storm: a new connection per attempt, and
// linkerd2-proxy's timeouts, backoff and 10 s between failed attempts). For trying a change to
// identity's admission control in a minute instead of a cluster run (docs/scale.md, "Fixes"):
//   npx tsx bench/scale/storm-edge.ts [callers=500] [storms=3] [concurrency=<identity's default>] [settings=0]
// A setting is identity's --certify-workers, optionally with its --listen-backlog after a colon (0:511 =
// no worker threads, Node's default backlog); a comma-separated list (e.g. 0,1 or 0:511,0:4096) runs one identity process per
// setting, all started at once, and the storms alternate between them (0, 1, 1, 0, 0, 1, ...; `storms` each), so
// that on a noisy machine the settings are compared within one run.
// With BENCH_CPU_PROF=<dir>, identity's processes write a CPU profile there when they end.
// Each identity process first takes one storm that is not counted (its JIT warm-up, the Go client's too).
// It prints each storm's time, failed calls and their reasons, identity's CPU for it (all threads) and its
// main thread's, then per setting the median storm time and the totals.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  createCertifier,
  createSigningPool,
  parseIssuer,
  parseTrustAnchors,
  startIdentityServer,
  DEFAULT_CERTIFY_CONCURRENCY,
  DEFAULT_LISTEN_BACKLOG,
} from '@minimesh/identity';
import { createLogger } from '@minimesh/runtime';
import { startDriven } from '../lib/driven.js';
import { readFileSync } from 'node:fs';
import { procStat } from '../lib/proc.js';
import { createIntermediateCa, createRootCa, privateKeyPem } from '../../packages/identity/test/helpers/pki.js';

const REVIEW_MS = Number(process.env.BENCH_REVIEW_MS ?? 5);
const id = (i: number): string => `sa-${i}.bench.serviceaccount.identity.minimesh.cluster.local`;

interface Pems {
  rootPem: string;
  issuerPem: string;
  issuerKeyPem: string;
  concurrency: number;
  workers: number;
  backlog: number;
}

async function child(): Promise<void> {
  const pems = await new Promise<Pems>((resolve) => process.once('message', (m) => resolve(m as Pems)));
  const issuer = parseIssuer({
    certPem: pems.issuerPem,
    keyPem: pems.issuerKeyPem,
    anchors: parseTrustAnchors(pems.rootPem, 'ca.crt'),
    certFile: 'crt.pem',
    keyFile: 'key.pem',
  });
  const pool = pems.workers > 0 ? await createSigningPool({ size: pems.workers }) : undefined;
  const certifier = createCertifier({
    issuer: () => issuer,
    // Token "t-<i>" belongs to system:serviceaccount:bench:sa-<i>, after the API server's round trip.
    reviewer: {
      review: (token) =>
        new Promise((resolve) =>
          setTimeout(
            () => resolve({ authenticated: true, username: `system:serviceaccount:bench:sa-${token.slice(2)}` }),
            REVIEW_MS,
          ),
        ),
    },
    controllerNamespace: 'minimesh',
    trustDomain: 'cluster.local',
    lifetime: 86_400_000,
    clockSkew: 20_000,
    ...(pool ? { crypto: pool } : {}),
  });
  const server = await startIdentityServer({
    addr: '127.0.0.1:0',
    certifier,
    logger: createLogger({ name: 'identity', level: 'error' }),
    concurrency: pems.concurrency,
    listenBacklog: pems.backlog,
  });
  process.send?.({ port: server.port });
  // Exit on the parent's kill, so that a profile asked with BENCH_CPU_PROF is written.
  process.once('SIGTERM', () => process.exit(0));
}

interface StormResult {
  ms: number;
  errors: number;
  failed: number;
  reasons: Record<string, number>;
}

/** CPU seconds of a process's main thread (its task whose id is the pid). */
function mainThreadCpu(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(stat[11]) + Number(stat[12])) / 100;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

async function main(): Promise<void> {
  const callers = Number(process.argv[2] ?? 500);
  const storms = Number(process.argv[3] ?? 3);
  const concurrency = Number(process.argv[4] ?? DEFAULT_CERTIFY_CONCURRENCY);
  const settings = (process.argv[5] ?? '0').split(',').map((s) => {
    const [w, b] = s.split(':');
    return { name: s, workers: Number(w), backlog: b === undefined ? DEFAULT_LISTEN_BACKLOG : Number(b) };
  });
  if (
    settings.some((s) => !Number.isInteger(s.workers) || s.workers < 0 || !Number.isInteger(s.backlog) || s.backlog < 1)
  )
    throw new Error(
      `settings: "${process.argv[5]}" is not valid: expected workers[:backlog] (whole numbers, workers >= 0, backlog >= 1), comma-separated (e.g. 0,1 or 0:511,0:4096)`,
    );
  const root = await createRootCa();
  const ca = await createIntermediateCa(root);
  const issuerKeyPem = await privateKeyPem(ca.keys);
  const servers = await Promise.all(
    settings.map(async ({ name, workers, backlog }) => {
      const child = fork(fileURLToPath(import.meta.url), ['--child'], {
        execArgv: [
          '--import',
          'tsx',
          ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
        ],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      child.send({
        rootPem: root.certPem,
        issuerPem: ca.certPem,
        issuerKeyPem,
        concurrency,
        workers,
        backlog,
      } satisfies Pems);
      const { port } = await new Promise<{ port: number }>((resolve) =>
        child.once('message', (m) => resolve(m as never)),
      );
      return { name, child, port, results: [] as (StormResult & { cpu: number; mainCpu: number })[] };
    }),
  );
  const gen = startDriven({
    go: 'identity-certify',
    script: '',
    label: 'storm client',
    queueErrors: true,
    requireGo: true,
  });
  await gen.next();
  const list = Array.from({ length: callers }, (_, i) => ({ identity: id(i), token: `t-${i}` }));
  const load = (await import('node:os')).loadavg()[0]?.toFixed(1);
  console.log(
    `storm-edge: ${callers} callers, concurrency ${concurrency}, settings (workers:backlog) ${settings.map((s) => `${s.workers}:${s.backlog}`).join(' / ')}, TokenReview ${REVIEW_MS} ms, load ${load}`,
  );
  for (const server of servers) {
    gen.send({ cmd: 'storm', port: server.port, callers: list });
    const r = await gen.next<StormResult>();
    console.log(`warm-up, setting ${server.name}: ${Math.round(r.ms)} ms, ${r.errors} failed calls (not counted)`);
  }
  for (let s = 0; s < storms; s++) {
    // ABBA: every other round in reverse, so that neither setting always follows the other.
    for (const server of s % 2 === 0 ? servers : [...servers].reverse()) {
      const pid = server.child.pid as number;
      const cpu0 = procStat(pid).cpu;
      const main0 = mainThreadCpu(pid);
      gen.send({ cmd: 'storm', port: server.port, callers: list });
      const r = await gen.next<StormResult>();
      const cpu = procStat(pid).cpu - cpu0;
      const mainCpu = mainThreadCpu(pid) - main0;
      server.results.push({ ...r, cpu, mainCpu });
      console.log(
        `storm ${s + 1}, setting ${server.name}: ${Math.round(r.ms)} ms, ${r.errors} failed calls, ${r.failed} callers without a certificate, identity CPU ${cpu.toFixed(2)} s (main thread ${mainCpu.toFixed(2)} s)`,
        JSON.stringify(r.reasons),
      );
    }
  }
  for (const { name, results } of servers) {
    const sum = (f: (r: StormResult & { cpu: number; mainCpu: number }) => number): number =>
      results.reduce((n, r) => n + f(r), 0);
    console.log(
      `setting ${name}: storm time median ${Math.round(median(results.map((r) => r.ms)))} ms (${results.map((r) => Math.round(r.ms)).join(' / ')}), failed calls ${sum((r) => r.errors)} (${results.map((r) => r.errors).join(' / ')}), callers without a certificate ${sum((r) => r.failed)}, identity CPU ${sum((r) => r.cpu).toFixed(2)} s (${results.map((r) => r.cpu.toFixed(2)).join(' / ')}), of it the main thread ${sum((r) => r.mainCpu).toFixed(2)} s`,
    );
  }
  gen.send({ cmd: 'exit' });
  for (const { child } of servers) child.kill();
}

if (process.argv.includes('--child')) await child();
else await main();
