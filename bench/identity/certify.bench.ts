// Benchmark of identity's Certify (not a test): certificates/s and p50/p99 latency at 1, 10 and 100
// concurrent gRPC callers, with the TokenReview answered locally, as ratios to the raw cost of one ECDSA
// P-256 signature measured in the same run.
//
//   npm run bench -w @minimesh/identity            (BENCH_SECONDS=3 by default per level)
//
// The server runs in a child process (one Node event loop = one core); its CPU time per certificate gives
// the one-core capacity, independent of the client sharing the machine.
import { fork, type ChildProcess } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, sign, webcrypto, X509Certificate } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { identity } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import {
  buildLeaf,
  createCertifier,
  createIdentityMetrics,
  parseIssuer,
  parseTrustAnchors,
  startIdentityServer,
  validateCsr,
  type Issuer,
  type TokenReviewer,
} from '@minimesh/identity';
import { asn1Certify } from './asn1-variant.js';
import {
  createCsr,
  createIntermediateCa,
  createRootCa,
  privateKeyPem,
  x509,
} from '../../packages/identity/test/helpers/pki.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const LEVELS = [1, 10, 100];
const ID = (i: number): string => `sa-${i}.bench.serviceaccount.identity.minimesh.cluster.local`;
const CALLERS = 100;

// The TokenReview, answered locally: token "t-<i>" belongs to system:serviceaccount:bench:sa-<i>.
const fakeReviewer: TokenReviewer = {
  review: async (token) => ({ authenticated: true, username: `system:serviceaccount:bench:sa-${token.slice(2)}` }),
};

interface Pems {
  rootPem: string;
  issuerPem: string;
  issuerKeyPem: string;
}

function makeCertifier(pems: Pems) {
  const issuer = parseIssuer({
    certPem: pems.issuerPem,
    keyPem: pems.issuerKeyPem,
    anchors: parseTrustAnchors(pems.rootPem, 'ca.crt'),
    certFile: 'crt.pem',
    keyFile: 'key.pem',
  });
  return {
    issuer,
    certifier: createCertifier({
      issuer: () => issuer,
      reviewer: fakeReviewer,
      controllerNamespace: 'minimesh',
      trustDomain: 'cluster.local',
      lifetime: 86_400_000,
      clockSkew: 20_000,
    }),
  };
}

// ---- child: the server ----
async function child(): Promise<void> {
  const pems = await new Promise<Pems>((resolve) => process.once('message', (m) => resolve(m as Pems)));
  const { certifier, issuer } = makeCertifier(pems);
  const registry = new Registry();
  const metrics = createIdentityMetrics(registry, () => issuer);
  const server = await startIdentityServer({
    addr: '127.0.0.1:0',
    certifier,
    logger: createLogger({ name: 'bench', level: 'silent' }),
    metrics,
  });
  process.on('message', (m) => {
    if (m === 'cpu') {
      void metrics.certifyDuration.get().then((h) => {
        const buckets = h.values
          .filter((v) => v.metricName === 'identity_certify_duration_seconds_bucket' && v.labels.result === 'ok')
          .map((v) => [Number((v.labels as Record<string, string | number>).le), v.value]);
        process.send?.({ cpu: process.cpuUsage(), buckets });
      });
    }
    if (m === 'stop') void server.close().then(() => process.exit(0));
  });
  process.send?.({ port: server.port });
}

// ---- parent: baseline, components, then gRPC at each concurrency ----
function timeLoop(fn: () => void, ms = 1000): number {
  for (let i = 0; i < 200; i++) fn();
  let n = 0;
  const start = process.hrtime.bigint();
  const end = start + BigInt(ms) * 1_000_000n;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
    now = process.hrtime.bigint();
  }
  return Number(now - start) / 1000 / n; // µs per call
}

async function timeAsyncLoop(fn: () => Promise<unknown>, ms = 1000): Promise<number> {
  for (let i = 0; i < 50; i++) await fn();
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    await fn();
    n++;
  }
  return ((performance.now() - start) * 1000) / n;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function main(): Promise<void> {
  process.stdout.write(`identity Certify benchmark — node ${process.version}, ${SECONDS}s per level\n\n`);
  const root = await createRootCa();
  const ca = await createIntermediateCa(root);
  const pems: Pems = { rootPem: root.certPem, issuerPem: ca.certPem, issuerKeyPem: await privateKeyPem(ca.keys) };
  const csrs = await Promise.all(
    Array.from({ length: CALLERS }, (_, i) => createCsr({ dns: [ID(i)] }).then((c) => c.der)),
  );

  // Baseline: one raw ECDSA P-256 signature over a leaf-sized message.
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const msg = Buffer.alloc(450, 7);
  const signUs = timeLoop(() => sign('sha256', msg, privateKey));

  // Components, in process.
  const { issuer, certifier } = makeCertifier(pems);
  const spki = validateCsr(csrs[0] as Buffer, ID(0)).publicKeyInfo;
  const csrUs = timeLoop(() => validateCsr(csrs[0] as Buffer, ID(0)));
  const leafUs = timeLoop(() =>
    buildLeaf({ issuer, identity: ID(0), publicKeyInfo: spki, lifetime: 86_400_000, clockSkew: 20_000 }),
  );
  // The CSR key import, the largest single cost: OpenSSL's DER decoder (before) against a JWK (what validateCsr does).
  const point = spki.subarray(spki.length - 65);
  const jwk = {
    kty: 'EC',
    crv: 'P-256',
    x: point.subarray(1, 33).toString('base64url'),
    y: point.subarray(33).toString('base64url'),
  };
  const importDerUs = timeLoop(() => createPublicKey({ key: spki, format: 'der', type: 'spki' }));
  const importJwkUs = timeLoop(() => createPublicKey({ key: jwk, format: 'jwk' }));
  const certifyUs = await timeAsyncLoop(() =>
    certifier.certify({ identity: ID(0), token: Buffer.from('t-0'), csr: csrs[0] as Buffer }),
  );
  const peculiarUs = await timeAsyncLoop(() => peculiarLeaf(issuer, csrs[0] as Buffer), 1000);
  const asn1 = asn1Certify(issuer);
  if (!new X509Certificate(asn1(csrs[0] as Buffer, ID(0))).verify(issuer.certificate.publicKey))
    throw new Error('asn1 variant: leaf does not verify');
  const asn1Us = timeLoop(() => asn1(csrs[0] as Buffer, ID(0)));

  const rows: string[][] = [
    ['raw ECDSA P-256 sign (baseline)', signUs.toFixed(1), '1.0'],
    ['CSR parse + checks + signature verify', csrUs.toFixed(1), (csrUs / signUs).toFixed(1)],
    ['  of which key import as JWK (after)', importJwkUs.toFixed(1), (importJwkUs / signUs).toFixed(1)],
    ['  key import with the DER decoder (before)', importDerUs.toFixed(1), (importDerUs / signUs).toFixed(1)],
    ['leaf build + sign (DER template, node crypto)', leafUs.toFixed(1), (leafUs / signUs).toFixed(1)],
    [
      '  same work with the DER template (CSR row + leaf row)',
      (csrUs + leafUs).toFixed(1),
      ((csrUs + leafUs) / signUs).toFixed(1),
    ],
    ['certifier.certify (no gRPC, fake TokenReview)', certifyUs.toFixed(1), (certifyUs / signUs).toFixed(1)],
    [
      'for comparison: @peculiar/x509 parse + verify + generate',
      peculiarUs.toFixed(1),
      (peculiarUs / signUs).toFixed(1),
    ],
    ['for comparison: @peculiar/asn1-* CSR parse + leaf build', asn1Us.toFixed(1), (asn1Us / signUs).toFixed(1)],
  ];
  process.stdout.write('In process (µs per operation, ratio to one signature):\n');
  for (const r of rows)
    process.stdout.write(`  ${(r[0] as string).padEnd(58)} ${(r[1] as string).padStart(8)} µs  ×${r[2]}\n`);

  // gRPC, server in a child process.
  const server: ChildProcess = fork(fileURLToPath(import.meta.url), ['--server'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve) => {
    server.once('message', (m) => resolve((m as { port: number }).port));
    server.send(pems);
  });
  // The server's CPU time and its own Certify latency histogram (handler start to callback), so the
  // server's share of the latency can be told apart from the client's and the machine's.
  type Snapshot = { cpu: NodeJS.CpuUsage; buckets: [number, number][] };
  const cpu = (): Promise<Snapshot> =>
    new Promise((resolve) => {
      server.once('message', (m) => resolve(m as Snapshot));
      server.send('cpu');
    });
  const cpuUs = (a: Snapshot, b: Snapshot): number => b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system;
  /** Upper bound (histogram bucket) of the server-side q-quantile between two snapshots, in ms. */
  const serverQuantile = (a: Snapshot, b: Snapshot, q: number): string => {
    const counts = b.buckets.map(([le, v], i) => [le, v - (a.buckets[i]?.[1] ?? 0)] as const);
    const total = counts[counts.length - 1]?.[1] ?? 0;
    const hit = counts.find(([, v]) => v >= q * total);
    return hit && Number.isFinite(hit[0]) ? `≤${hit[0] * 1000}` : '>10000';
  };
  const clients = Array.from(
    { length: 4 },
    () => new identity.IdentityClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure()),
  );
  const call = (i: number): Promise<void> =>
    new Promise((resolve, reject) => {
      (clients[i % clients.length] as identity.IdentityClient).certify(
        { identity: ID(i), token: Buffer.from(`t-${i}`), certificateSigningRequest: csrs[i] as Buffer },
        (err) => (err ? reject(err) : resolve()),
      );
    });

  process.stdout.write('\ngRPC Certify over loopback (server: one process, one core):\n');
  process.stdout.write(
    `  ${'callers'.padEnd(8)} ${'certs/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'server CPU µs/cert'.padStart(19)} ${'one-core certs/s'.padStart(17)} ${'×sign'.padStart(7)} ${'server p50/p99 ms'.padStart(18)}\n`,
  );
  const summary: Record<string, unknown> = {
    signUs,
    csrUs,
    importDerUs,
    importJwkUs,
    leafUs,
    certifyUs,
    peculiarUs,
    asn1Us,
    levels: [] as unknown[],
  };
  for (const level of LEVELS) {
    // Warm-up.
    await Promise.all(Array.from({ length: level }, (_, i) => call(i)));
    const latencies: number[] = [];
    const cpu0 = await cpu();
    const t0 = performance.now();
    const deadline = t0 + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: level }, async (_, i) => {
        while (performance.now() < deadline) {
          const s = performance.now();
          await call(i);
          latencies.push(performance.now() - s);
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    const cpu1 = await cpu();
    const serverUs = cpuUs(cpu0, cpu1) / latencies.length;
    latencies.sort((a, b) => a - b);
    const rate = latencies.length / elapsed;
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    const serverP = `${serverQuantile(cpu0, cpu1, 0.5)}/${serverQuantile(cpu0, cpu1, 0.99)}`;
    (summary.levels as unknown[]).push({ level, rate, p50, p99, serverUs, serverP });
    process.stdout.write(
      `  ${String(level).padEnd(8)} ${rate.toFixed(0).padStart(8)} ${p50.toFixed(2).padStart(8)} ${p99.toFixed(2).padStart(8)} ${serverUs.toFixed(0).padStart(19)} ${(1e6 / serverUs).toFixed(0).padStart(17)} ${(serverUs / signUs).toFixed(1).padStart(7)} ${serverP.padStart(18)}\n`,
    );
  }
  // Open loop: 100 callers, each asking every 100 ms (1000 certs/s offered in total), latency measured from
  // the scheduled send time so a slow server cannot hide its queue (no coordinated omission).
  {
    const offered = Number(process.env.BENCH_OPEN_RATE ?? 1000);
    const interval = (CALLERS / offered) * 1000;
    const latencies: number[] = [];
    const cpu0 = await cpu();
    const t0 = performance.now() + 10;
    const deadline = t0 + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CALLERS }, async (_, i) => {
        for (let k = 0; ; k++) {
          const due = t0 + (i / CALLERS) * interval + k * interval;
          if (due >= deadline) return;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          // Timers may fire up to a millisecond early: count from whichever came first, the send or its due time.
          const sent = Math.min(performance.now(), due);
          await call(i);
          latencies.push(performance.now() - sent);
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    const cpu1 = await cpu();
    const serverUs = cpuUs(cpu0, cpu1) / latencies.length;
    latencies.sort((a, b) => a - b);
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    const serverP = `${serverQuantile(cpu0, cpu1, 0.5)}/${serverQuantile(cpu0, cpu1, 0.99)}`;
    (summary.levels as unknown[]).push({
      level: `${CALLERS} open @${offered}/s`,
      rate: latencies.length / elapsed,
      p50,
      p99,
      serverUs,
      serverP,
    });
    process.stdout.write(
      `  ${`${CALLERS}*`.padEnd(8)} ${(latencies.length / elapsed).toFixed(0).padStart(8)} ${p50.toFixed(2).padStart(8)} ${p99.toFixed(2).padStart(8)} ${serverUs.toFixed(0).padStart(19)} ${(1e6 / serverUs).toFixed(0).padStart(17)} ${(serverUs / signUs).toFixed(1).padStart(7)} ${serverP.padStart(18)}\n`,
    );
    process.stdout.write(
      `  * open loop: ${CALLERS} callers, ${offered} certs/s offered in total, latency from the scheduled send time\n`,
    );
  }
  process.stdout.write(`\nraw signatures/s on one core: ${(1e6 / signUs).toFixed(0)}\n`);
  process.stdout.write(`goal: ≥1000 certs/s on one core and p99 < 10 ms at 100 callers\n`);
  if (process.env.BENCH_JSON) process.stdout.write(`${JSON.stringify(summary)}\n`);
  for (const c of clients) c.close();
  server.send('stop');
}

/** The same work done with @peculiar/x509's generic generator (WebCrypto), for the docs' comparison. */
let peculiarKey: webcrypto.CryptoKey | undefined;
async function peculiarLeaf(issuer: Issuer, der: Buffer): Promise<void> {
  if (!peculiarKey) {
    const pkcs8 = issuer.privateKey.export({ type: 'pkcs8', format: 'der' });
    peculiarKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, { name: 'ECDSA', namedCurve: 'P-256' }, false, [
      'sign',
    ]);
  }
  const req = new x509.Pkcs10CertificateRequest(der);
  if (!(await req.verify())) throw new Error('CSR signature');
  await x509.X509CertificateGenerator.create({
    subject: `CN=${ID(0)}`,
    issuer: issuer.certificate.subject,
    publicKey: req.publicKey,
    signingKey: peculiarKey as never,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as never,
    notBefore: new Date(Date.now() - 20_000),
    notAfter: new Date(Date.now() + 86_420_000),
    extensions: [
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: ID(0) }]),
    ],
  });
}

if (process.argv.includes('--server')) void child();
else
  void main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
