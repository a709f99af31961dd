// The restart storm without a cluster: identity's gRPC edge and certifier (as shipped, in a child process
// of its own), its TokenReview answered by a stand-in after BENCH_REVIEW_MS (default 5 ms), and the Go
// storm client of the scale bench (../go-clients identity-certify storm: one connection per caller, a
// 1 s connect timeout as linkerd2-proxy's, a failure retried after 100 ms). For trying a change to
// identity's admission control in a minute instead of a cluster run (docs/scale.md, "Fixes"):
//   npx tsx bench/scale/storm-edge.ts [callers=500] [storms=3] [concurrency=<identity's default>]
// With BENCH_CPU_PROF=<dir>, identity's process writes a CPU profile there when it ends.
// It prints each storm's time, failed calls and their reasons, and identity's CPU for it.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  createCertifier,
  parseIssuer,
  parseTrustAnchors,
  startIdentityServer,
  DEFAULT_CERTIFY_CONCURRENCY,
} from '@minimesh/identity';
import { createLogger } from '@minimesh/runtime';
import { startDriven } from '../lib/driven.js';
import { procStat } from '../lib/proc.js';
import { createIntermediateCa, createRootCa, privateKeyPem } from '../../packages/identity/test/helpers/pki.js';

const REVIEW_MS = Number(process.env.BENCH_REVIEW_MS ?? 5);
const id = (i: number): string => `sa-${i}.bench.serviceaccount.identity.minimesh.cluster.local`;

interface Pems {
  rootPem: string;
  issuerPem: string;
  issuerKeyPem: string;
  concurrency: number;
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
  });
  const server = await startIdentityServer({
    addr: '127.0.0.1:0',
    certifier,
    logger: createLogger({ name: 'identity', level: 'error' }),
    concurrency: pems.concurrency,
  });
  process.send?.({ port: server.port });
  // Exit on the parent's kill, so that a profile asked with BENCH_CPU_PROF is written.
  process.once('SIGTERM', () => process.exit(0));
}

async function main(): Promise<void> {
  const callers = Number(process.argv[2] ?? 500);
  const storms = Number(process.argv[3] ?? 3);
  const concurrency = Number(process.argv[4] ?? DEFAULT_CERTIFY_CONCURRENCY);
  const root = await createRootCa();
  const ca = await createIntermediateCa(root);
  const server = fork(fileURLToPath(import.meta.url), ['--child'], {
    execArgv: [
      '--import',
      'tsx',
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  server.send({
    rootPem: root.certPem,
    issuerPem: ca.certPem,
    issuerKeyPem: await privateKeyPem(ca.keys),
    concurrency,
  });
  const { port } = await new Promise<{ port: number }>((resolve) => server.once('message', (m) => resolve(m as never)));
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
  console.log(`storm-edge: ${callers} callers, concurrency ${concurrency}, TokenReview ${REVIEW_MS} ms, load ${load}`);
  for (let s = 0; s < storms; s++) {
    const cpu0 = procStat(server.pid as number).cpu;
    gen.send({ cmd: 'storm', port, callers: list });
    const r = await gen.next<{ ms: number; errors: number; failed: number; reasons: Record<string, number> }>();
    const cpu = procStat(server.pid as number).cpu - cpu0;
    console.log(
      `storm ${s + 1}: ${Math.round(r.ms)} ms, ${r.errors} failed calls, ${r.failed} callers without a certificate, identity CPU ${cpu.toFixed(2)} s`,
      JSON.stringify(r.reasons),
    );
  }
  gen.send({ cmd: 'exit' });
  server.kill();
}

if (process.argv.includes('--child')) await child();
else await main();
