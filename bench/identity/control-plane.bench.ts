// identity's control-plane benchmark against the real local API server (npm run bench -- identity;
// run it under the cluster lock: flock -w 7200 /tmp/minimesh-cluster.lock npm run bench -- identity).
//
// The program is what ships: packages/identity/bundle/main.mjs (scripts/bundle.mjs), started as a
// process with a ServiceAccount kubeconfig whose server is a relay that counts the TCP connections the
// API server accepts. The load generator is another process with 16 real service-account tokens and
// CSRs, in Go by default (../go-clients identity-certify, as Linkerd's figures were measured; BENCH_CLIENT=node uses
// certify-load.mjs). Figures:
//   start to first Certify    spawn → first successful Certify (a real TokenReview), median of 3 starts
//   idle RSS                  5 s after the first Certify
//   one client                sequential Certify for BENCH_SECONDS: p50, p99, worst
//   16 clients                closed loop for BENCH_SECONDS: certificates/s, CPU s per 1k, RSS median and peak,
//                             API server CPU per certificate
//   API connections           accepted by the API server over the measured instance's whole life
// Raw numbers go to bench/identity/runs.json; the table compares with the previous run and Linkerd's
// figures on this machine (Linkerd edge-26.8.3's controller, measured beside minimesh at 97042ba, 2026-11-22;
// packages/identity/README.md).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startConnectionCounter } from '@minimesh/kube/testing';
import {
  adminClient,
  createNamespace,
  createServiceAccountToken,
  ensureCluster,
  kubeconfigForServiceAccount,
} from '@minimesh/local-cluster';
import { startDriven } from '../lib/driven.js';
import { apiServerPid, freePort, procStat } from '../lib/proc.js';
import { newRun, percentile, phase, round, saveRun, stopProcess, table, watchdog } from '../lib/report.js';
import { makeTutorialPki } from '../../packages/identity/test/helpers/openssl-pki.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CALLERS = 16;
const STARTS = 3;
const AUDIENCE = 'identity.minimesh.io';
const here = fileURLToPath(new URL('.', import.meta.url));
const repo = join(here, '..', '..');
const bundled = join(repo, 'packages', 'identity', 'bundle', 'main.mjs');
const entry =
  process.env.BENCH_ENTRY ?? (existsSync(bundled) ? bundled : join(repo, 'packages', 'identity', 'dist', 'main.js'));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();

interface LoadGen {
  child: ChildProcess;
  kind: 'go' | 'node';
  ask<T>(m: object): Promise<T>;
  exit(): void;
}

/**
 * The load generator: Go by default (../go-clients identity-certify: linkerd2-proxy-api's Go client on
 * grpc-go, as Linkerd's figures were measured), BENCH_CLIENT=node (or no Go) certify-load.mjs (grpc-js).
 */
async function loadGen(): Promise<LoadGen> {
  const gen = startDriven({
    go: 'identity-certify',
    script: join(here, 'certify-load.mjs'),
    label: 'load generator',
    queueErrors: true,
  });
  await gen.next(); // ready
  return {
    child: gen.child,
    kind: gen.kind,
    async ask<T>(m: object): Promise<T> {
      gen.send(m);
      return await gen.next<T>();
    },
    exit: () => gen.send({ cmd: 'exit' }),
  };
}

async function main(): Promise<void> {
  const children: ChildProcess[] = [];
  watchdog((SECONDS * 2 + 240) * 1000, () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  });
  phase('ensureCluster');
  const cluster = await ensureCluster();
  const admin = adminClient();
  const suffix = Date.now().toString(36);
  const ns = `mm-bench-id-${suffix}`;
  const role = `mm-bench-id-${suffix}`;
  const dir = mkdtempSync(join(tmpdir(), 'mm-bench-id-'));
  const relay = { close: async () => undefined } as { close(): Promise<void> };
  console.log(
    `identity bench: ${entry.replace(`${repo}/`, '')} against ${cluster.kubeconfigPath}, ${SECONDS} s per phase`,
  );
  try {
    phase(`namespace ${ns}, RBAC, tokens`);
    await createNamespace(ns);
    await admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: role },
      rules: [{ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }],
    });
    await admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: 'minimesh-identity', namespace: ns }],
    });
    const kubeconfig = await kubeconfigForServiceAccount({ namespace: ns, serviceAccount: 'minimesh-identity' });
    const callers = await Promise.all(
      Array.from({ length: CALLERS }, async (_, i) => ({
        identity: `sa-${i}.${ns}.serviceaccount.identity.minimesh.cluster.local`,
        token: await createServiceAccountToken({ namespace: ns, serviceAccount: `sa-${i}`, audiences: [AUDIENCE] }),
      })),
    );
    const pki = makeTutorialPki(dir);
    mkdirSync(join(dir, 'issuer'));
    writeFileSync(join(dir, 'issuer', 'crt.pem'), readFileSync(pki.issuerCrt));
    writeFileSync(join(dir, 'issuer', 'key.pem'), readFileSync(pki.issuerKey));
    // RBAC takes a moment to reach the authorizer
    await sleep(1000);

    phase('load generator');
    const gen = await loadGen();
    children.push(gen.child);
    const start = async (kc: string) => {
      const port = await freePort();
      const since = now();
      const child = spawn(
        process.execPath,
        [
          entry,
          '--addr',
          `127.0.0.1:${port}`,
          '--admin-addr',
          '127.0.0.1:0',
          '--issuer-dir',
          join(dir, 'issuer'),
          '--trust-anchors',
          pki.caCrt,
          '--kubeconfig',
          kc,
          '--log-level',
          'warn',
          '--log-format',
          'json',
        ],
        { stdio: ['ignore', 'inherit', 'inherit'] },
      );
      children.push(child);
      const { ms } = await gen.ask<{ ms: number }>({ cmd: 'first', port, since, callers });
      return { child, port, firstMs: ms };
    };
    const stop = async (child: ChildProcess) => {
      const how = await stopProcess(child);
      if (!how.startsWith('stopped on SIGTERM (exit 0')) phase(`pid ${child.pid} ${how}`);
      return how;
    };

    phase(`start to first Certify x${STARTS}`);
    // start-up, STARTS times
    const starts: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      const s = await start(kubeconfig);
      starts.push(s.firstMs);
      await stop(s.child);
    }
    starts.sort((a, b) => a - b);

    phase('the measured instance (relayed), idle 5 s');
    // the measured instance, through the connection-counting relay
    const api = new URL(JSON.parse(readFileSync(kubeconfig, 'utf8')).clusters[0].cluster.server as string);
    const counter = await startConnectionCounter({ host: api.hostname, port: Number(api.port) });
    relay.close = () => counter.close();
    const kc = JSON.parse(readFileSync(kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
    for (const c of kc.clusters) c.cluster.server = `https://127.0.0.1:${counter.port}`;
    const relayed = join(dir, 'relayed.kubeconfig');
    writeFileSync(relayed, JSON.stringify(kc));
    const inst = await start(relayed);
    const pid = inst.child.pid as number;
    await sleep(5000);
    const idle = procStat(pid);

    phase(`one client, ${SECONDS} s`);
    const single = await gen.ask<{ count: number; errors: number; latencies: number[] }>({
      cmd: 'run',
      port: inst.port,
      callers: callers.slice(0, 1),
      seconds: SECONDS,
    });
    const singleLat = single.latencies.sort((a, b) => a - b);

    phase(`${CALLERS} clients, ${SECONDS} s`);
    const apiPid = apiServerPid();
    const api0 = apiPid ? procStat(apiPid).cpu : NaN;
    const before = procStat(pid);
    const rss: number[] = [];
    const sampler = setInterval(() => rss.push(procStat(pid).rssMb), 100);
    const load = await gen.ask<{ count: number; errors: number; latencies: number[] }>({
      cmd: 'run',
      port: inst.port,
      callers,
      seconds: SECONDS,
    });
    clearInterval(sampler);
    const after = procStat(pid);
    const api1 = apiPid ? procStat(apiPid).cpu : NaN;
    rss.sort((a, b) => a - b);
    const loadLat = load.latencies.sort((a, b) => a - b);
    phase('stop');
    const stopped = await stop(inst.child);
    // 'exit' gets no answer (the load generator exits): wait for its exit, not for a reply
    const genExited = new Promise((r) => gen.child.once('exit', r));
    gen.exit();
    await genExited;

    const run = newRun('identity', `${entry.replace(`${repo}/`, '')}, ${gen.kind} load generator`);
    const f = run.figures;
    f['start to first Certify (median of 3)'] = {
      value: round(percentile(starts, 50), 0),
      unit: 'ms',
      better: 'lower',
      linkerd: 77,
      goal: 300,
    };
    f['idle RSS'] = { value: round(idle.rssMb, 1), unit: 'MB', better: 'lower', linkerd: 60, goal: 90 };
    f['one client: Certify p50'] = { value: round(percentile(singleLat, 50)), unit: 'ms', better: 'lower' };
    f['one client: Certify p99'] = { value: round(percentile(singleLat, 99)), unit: 'ms', better: 'lower' };
    f['one client: worst Certify'] = {
      value: round(singleLat.at(-1) ?? NaN),
      unit: 'ms',
      better: 'lower',
      linkerd: 17,
      goal: 30,
    };
    f['16 clients: certificates/s'] = {
      value: round(load.count / SECONDS, 0),
      unit: '/s',
      better: 'higher',
      linkerd: 1124,
    };
    f['16 clients: CPU per 1k certificates'] = {
      value: round(((after.cpu - before.cpu) / load.count) * 1000),
      unit: 's',
      better: 'lower',
      linkerd: 0.77,
      goal: round(0.77 * 1.5),
    };
    f['16 clients: RSS median'] = {
      value: round(percentile(rss, 50), 1),
      unit: 'MB',
      better: 'lower',
      linkerd: 69,
      goal: round(69 * 1.5, 1),
    };
    f['16 clients: RSS peak'] = { value: round(rss.at(-1) ?? NaN, 1), unit: 'MB', better: 'lower' };
    f['16 clients: Certify p99'] = { value: round(percentile(loadLat, 99)), unit: 'ms', better: 'lower' };
    f['API server CPU per 1k certificates'] = {
      value: round(((api1 - api0) / load.count) * 1000),
      unit: 's',
      better: 'lower',
    };
    f['API server connections opened'] = { value: counter.connections, unit: '', better: 'lower', goal: 1 };
    f['errors'] = { value: single.errors + load.errors, unit: '', better: 'lower', goal: 0 };
    run.raw = {
      starts,
      idle,
      single: { n: single.count },
      load: { n: load.count },
      rssSamples: rss.length,
      seconds: SECONDS,
      stopped,
    };
    const previous = saveRun(join(here, 'runs.json'), run);
    console.log(`\n${table(run, previous)}\n`);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await relay.close();
    await admin
      .request('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${role}`)
      .catch(() => undefined);
    await admin.request('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterroles/${role}`).catch(() => undefined);
    await admin.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
