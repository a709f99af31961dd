// The control plane at thousands of pods (npm run bench -- scale; docs/scale.md). Run it under the
// machine's cluster lock. For each size (BENCH_SCALE_SIZES, default 500,1000,2000,5000 pods):
//   1. the local cluster with simulated nodes (kwok) and the workload generator's Deployments, Services,
//      Servers, AuthorizationPolicies and HTTPRoutes at that size (packages/local-cluster);
//   2. for each subject (minimesh; Linkerd's controllers when BENCH_LINKERD_CONTROLLER / BENCH_LINKERD_POLICY
//      give their binaries): destination, policy controller and identity started as processes against the
//      API server, then the Go clients of linkerd2-proxy-api (../go-clients scale-streams) holding the
//      streams proxies hold: BENCH_SCALE_CLIENTS client proxies (default 10) each with one destination Get
//      and one outbound policy Watch per Service, and one inbound policy WatchPort per pod port;
//   3. figures: time to ready, RSS and CPU of each program, API server CPU and the watches it serves,
//      time until every stream has its first answer, propagation of endpoint changes during churn
//      (rolling updates at BENCH_CHURN pods/s for BENCH_CHURN_SECONDS), of a Server change to every
//      inbound watch of its pods, every Get stream's final view against the API's EndpointSlices, and the
//      restart storm: one Certify per pod, all at once (../go-clients identity-certify storm);
//   4. the injector (minimesh's): admission latency at 50 pod creations/s through the real API server.
// Raw numbers go to bench/scale/runs.json (one run, all sizes; BENCH_SCALE_RUN=<id> adds sizes to an
// earlier run, so a long run can be split in sessions); bench/scale/report.ts draws the plots and the
// table of docs/scale.md from it.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKubeClient, loadKubeConfig } from '@minimesh/kube';
import {
  adminClient,
  applyWorkload,
  createNamespace,
  createServiceAccountToken,
  ensureCluster,
  ensureSimulatedNodes,
  exposeHostPort,
  SIMULATED_NODE_LABELS,
  SIMULATED_NODE_TOLERATION,
  startChurn,
  workloadStatus,
  type KubeClient,
  type KubeObject,
  type WorkloadLayout,
} from '@minimesh/local-cluster';
import { policyCrds } from '@minimesh/policy';
import { startDriven, type Driven } from '../lib/driven.js';
import { newRun, percentile, phase, round, watchdog } from '../lib/report.js';
import { makeTutorialPki } from '../../packages/identity/test/helpers/openssl-pki.js';
import { makeTestCa, makeTestCert } from '@minimesh/test-support/tls';
import {
  apiServerPid,
  freePort,
  linkerd,
  minimesh,
  now,
  procStat,
  rssPeak,
  type Component,
  type Started,
  type Subject,
} from './programs.js';
import { loadRuns, saveRuns, type ScaleRun, type SizeResult } from './runs.js';
import { addSlice, apiEndpoints, compareViews, type Views } from './views.js';
import { apiServerRestart, leaderKill, type ReliabilityContext } from './reliability.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = join(here, '..', '..');
const SIZES = (process.env.BENCH_SCALE_SIZES ?? '500,1000,2000,5000').split(',').map(Number);
const CLIENTS = Number(process.env.BENCH_SCALE_CLIENTS ?? 10);
const CHURN = Number(process.env.BENCH_CHURN ?? 5);
const CHURN_SECONDS = Number(process.env.BENCH_CHURN_SECONDS ?? 30);
/** Linkerd's proxy container as its injector writes the ports of it that Linkerd's destination reads. */
const LINKERD_PROXY_CONTAINER = {
  name: 'linkerd-proxy',
  image: 'registry.k8s.io/pause:3.10',
  env: [
    { name: 'LINKERD2_PROXY_INBOUND_LISTEN_ADDR', value: '0.0.0.0:4143' },
    { name: 'LINKERD2_PROXY_ADMIN_LISTEN_ADDR', value: '0.0.0.0:4191' },
    { name: 'LINKERD2_PROXY_CONTROL_LISTEN_ADDR', value: '0.0.0.0:4190' },
  ],
  ports: [
    { name: 'linkerd-proxy', containerPort: 4143 },
    { name: 'linkerd-admin', containerPort: 4191 },
  ],
};

/** How long the client proxies wait for every stream's first answer before going on with what answered. */
const OPEN_TIMEOUT_MS = Number(process.env.BENCH_SCALE_OPEN_TIMEOUT_MS ?? 180_000);
const POLICY_ROUNDS = Number(process.env.BENCH_POLICY_ROUNDS ?? 5);
const INJECT_RATE = Number(process.env.BENCH_INJECT_RATE ?? 50);
const INJECT_SECONDS = Number(process.env.BENCH_INJECT_SECONDS ?? 10);
const CP_NS = 'mm-scale-cp';
const AUDIENCES = ['identity.minimesh.io', 'identity.l5d.io'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
for (const s of SIZES)
  if (!Number.isInteger(s) || s < 10)
    throw new Error(
      `BENCH_SCALE_SIZES: ${process.env.BENCH_SCALE_SIZES} is not valid: expected pod counts of at least 10`,
    );

/**
 * The API server's open watches (all clients: the count is the server's), in all and per resource
 * (`group/resource`), so that a delta around a program's start says which resources it watched.
 */
async function apiWatches(admin: KubeClient): Promise<{ total: number; byResource: Record<string, number> }> {
  const text = String(await admin.request<string>('GET', '/metrics'));
  const byResource: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_longrunning_requests{') || !line.includes('verb="WATCH"')) continue;
    const group = /[{,]group="([^"]*)"/.exec(line)?.[1] ?? '';
    const resource = /[{,]resource="([^"]*)"/.exec(line)?.[1] ?? '?';
    const key = `${group || 'core'}/${resource}`;
    byResource[key] = (byResource[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return { total: Object.values(byResource).reduce((a, b) => a + b, 0), byResource };
}

/** Per resource, what changed between two readings of apiWatches (zeros left out). */
function watchDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const d = (after[k] ?? 0) - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

interface ServiceRef {
  namespace: string;
  name: string;
  authority: string;
  ip: string;
  port: number;
}

async function listServices(admin: KubeClient): Promise<ServiceRef[]> {
  const list = await admin.request<{ items: KubeObject[] }>(
    'GET',
    `/api/v1/services?labelSelector=${encodeURIComponent('minimesh.io/scale-workload=true')}`,
  );
  return list.items.map((s) => ({
    namespace: s.metadata.namespace,
    name: s.metadata.name,
    authority: `${s.metadata.name}.${s.metadata.namespace}.svc.cluster.local:80`,
    ip: s.spec.clusterIP,
    port: 80,
  }));
}

async function listPods(admin: KubeClient): Promise<Array<{ ns: string; name: string; app: string; sa: string }>> {
  const out: Array<{ ns: string; name: string; app: string; sa: string }> = [];
  let cont = '';
  do {
    const page = await admin.request<{ items: KubeObject[]; metadata: { continue?: string } }>(
      'GET',
      `/api/v1/pods?limit=1000&labelSelector=${encodeURIComponent('minimesh.io/scale-workload=true')}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
    );
    for (const p of page.items)
      if (!p.metadata.deletionTimestamp && p.status?.phase === 'Running')
        out.push({
          ns: p.metadata.namespace,
          name: p.metadata.name,
          app: p.metadata.labels.app,
          sa: p.spec.serviceAccountName,
        });
    cont = page.metadata.continue ?? '';
  } while (cont);
  return out;
}

/**
 * A plain watch of every EndpointSlice: when each (authority, ip:port) was first delivered ready by the
 * API server, the baseline of propagation (what destination adds is the time after it).
 */
function watchSlices(admin: KubeClient): { seen: Map<string, number>; stop(): void } {
  const seen = new Map<string, number>();
  const w = admin.watch(
    '/apis/discovery.k8s.io/v1/endpointslices',
    (ev) => {
      const t = now();
      if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') return;
      const one = new Map<string, Set<string>>();
      addSlice(one, ev.object);
      for (const [authority, set] of one)
        for (const ep of set) if (!seen.has(`${authority} ${ep}`)) seen.set(`${authority} ${ep}`, t);
    },
    (items) => {
      const t = now();
      const all = new Map<string, Set<string>>();
      for (const s of items) addSlice(all, s);
      for (const [authority, set] of all) for (const ep of set) seen.set(`${authority} ${ep}`, t - 1e9); // old: not a change
    },
  );
  return { seen, stop: () => w.stop() };
}

async function waitSettled(admin: KubeClient, layout: WorkloadLayout, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const st = await workloadStatus(admin);
    if (st.settled === layout.deployments.length) return;
    if (Date.now() > deadline) throw new Error(`the workload did not settle after churn: ${JSON.stringify(st)}`);
    await sleep(1000);
  }
}

async function ask<T>(d: Driven, m: object): Promise<T> {
  d.send(m);
  return await d.next<T>();
}

interface Ctx {
  admin: KubeClient;
  dir: string;
  kubeconfig: string;
  pki: { caCrt: string; issuerCrt: string; issuerKey: string };
  layout: WorkloadLayout;
  size: number;
  children: ChildProcess[];
}

/** One subject at one size: every figure of §2–3. */
async function measureSubject(subject: Subject, ctx: Ctx): Promise<SizeResult> {
  const { admin } = ctx;
  const f: Record<string, number> = {};
  const raw: Record<string, unknown> = {};
  const apiPid = apiServerPid();
  const apiCpu = () => (apiPid ? procStat(apiPid).cpu : NaN);
  const running: Partial<Record<Component, Started>> = {};
  const components: Component[] = (['destination', 'policy', 'identity'] as const).filter((c) => subject.has(c));
  try {
    // start, one after the other: time to ready, the watches each opens, API server CPU to serve them
    for (const c of components) {
      phase(`${subject.name} ${c}: start (${ctx.size} pods)`);
      const w0 = await apiWatches(admin);
      const a0 = apiCpu();
      const s = await subject.start(c, {
        kubeconfig: ctx.kubeconfig,
        controllerNamespace: CP_NS,
        issuerCrt: ctx.pki.issuerCrt,
        issuerKey: ctx.pki.issuerKey,
        trustAnchors: ctx.pki.caCrt,
        dir: ctx.dir,
        podName: `scale-${subject.name}-${c}`,
      });
      ctx.children.push(s.child);
      running[c] = s;
      await sleep(2000);
      f[`${c}.readyMs`] = round(s.readyMs, 0);
      const w1 = await apiWatches(admin);
      f[`${c}.watches`] = w1.total - w0.total;
      // which resources: every client's watches are in the server's count, so one that another client
      // reopened during the start shows here too
      raw[`${c}.watchesByResource`] = watchDelta(w0.byResource, w1.byResource);
      f[`${c}.apiCpuStartS`] = round(apiCpu() - a0);
      const st = procStat(s.pid);
      f[`${c}.cpuStartS`] = round(st.cpu);
      f[`${c}.rssIdleMb`] = round(st.rssMb, 1);
    }
    const dst = running.destination;
    const pol = running.policy;
    const services = await listServices(admin);
    const pods = await listPods(admin);
    raw.services = services.length;
    raw.pods = pods.length;

    // the streams
    const clients = startDriven({
      go: 'scale-streams',
      script: '',
      label: `${subject.name} scale clients`,
      requireGo: true,
    });
    ctx.children.push(clients.child);
    await clients.next(); // started
    const cpu0 = { d: dst ? procStat(dst.pid).cpu : NaN, p: pol ? procStat(pol.pid).cpu : NaN, a: apiCpu() };
    phase(
      `${subject.name}: opening streams (${CLIENTS} clients x ${services.length} Services, ${pods.length} inbound)`,
    );
    const opened = await ask<{
      ready: Record<string, number>;
      ms: number;
      msByKind?: Record<string, number>;
      incomplete?: boolean;
    }>(clients, {
      cmd: 'open',
      destination: dst ? [`127.0.0.1:${dst.grpcPort}`] : [],
      policy: pol ? [`127.0.0.1:${pol.grpcPort}`] : [],
      clients: CLIENTS,
      podsPerConn: 50,
      node: 'kwok-0',
      openTimeoutMs: OPEN_TIMEOUT_MS,
      services: services.map((s) => ({ authority: s.authority, ip: s.ip, port: s.port })),
      pods: pol ? pods.map((p) => ({ ns: p.ns, name: p.name, port: 8080 })) : [],
    });
    if (opened.incomplete) {
      // Some streams never got a first answer: the counts below say how many did.
      phase(`${subject.name}: not every stream answered within ${OPEN_TIMEOUT_MS} ms: ${JSON.stringify(opened.ready)}`);
      f['streams.incomplete'] = 1;
    } else f['streams.openMs'] = round(opened.ms, 0);
    for (const [kind, ms] of Object.entries(opened.msByKind ?? {})) f[`streams.${kind}OpenMs`] = round(ms, 0);
    f['streams.get'] = opened.ready.get ?? 0;
    f['streams.outbound'] = opened.ready.outbound ?? 0;
    f['streams.inbound'] = opened.ready.inbound ?? 0;
    if (dst) f['destination.cpuOpenS'] = round(procStat(dst.pid).cpu - cpu0.d);
    if (pol) f['policy.cpuOpenS'] = round(procStat(pol.pid).cpu - cpu0.p);
    f['api.cpuOpenS'] = round(apiCpu() - cpu0.a);
    await sleep(5000);
    for (const c of components) f[`${c}.rssMb`] = round(procStat(running[c]!.pid).rssMb, 1);

    // policy propagation: a Server's protocol changed, until every inbound watch of its pods has it
    if (pol) {
      const lat: number[] = [];
      for (let r = 0; r < POLICY_ROUNDS; r++) {
        const d = ctx.layout.deployments[(r * 7) % ctx.layout.deployments.length]!;
        const path = `/apis/policy.minimesh.io/v1beta3/namespaces/${d.namespace}/servers/${d.name}`;
        const groups = subject.name === 'linkerd' ? ['policy.linkerd.io'] : ['policy.minimesh.io'];
        const current = await admin.request<KubeObject>('GET', path.replace('policy.minimesh.io', groups[0]!));
        const next = current.spec.proxyProtocol === 'HTTP/2' ? 'HTTP/1' : 'HTTP/2';
        const podKeys = pods.filter((p) => p.ns === d.namespace && p.app === d.name).map((p) => `${p.ns}/${p.name}`);
        await ask(clients, { cmd: 'expectInbound', podKeys, protocol: next === 'HTTP/2' ? 'http2' : 'http1' });
        const before = now();
        await admin.request(
          'PATCH',
          path.replace('policy.minimesh.io', groups[0]!),
          { spec: { proxyProtocol: next } },
          'application/merge-patch+json',
        );
        const got = await Promise.race([
          clients.next<{ inboundTimes: number[] }>(),
          sleep(30_000).then(() => undefined),
        ]);
        if (!got) throw new Error(`${subject.name}: a Server change did not reach every inbound watch in 30 s`);
        for (const t of got.inboundTimes) lat.push(t - before);
        await sleep(300);
      }
      lat.sort((a, b) => a - b);
      f['policy.propagationP50Ms'] = round(percentile(lat, 50));
      f['policy.propagationP99Ms'] = round(percentile(lat, 99));
      raw.policySamples = lat.length;
    }

    // churn: rolling updates; endpoint adds timed against a plain watch of the same slices
    phase(`${subject.name}: churn ${CHURN} pods/s for ${CHURN_SECONDS} s`);
    const baseline = watchSlices(admin);
    await sleep(3000); // the watch has listed
    await ask(clients, { cmd: 'record' });
    const c0 = Object.fromEntries(components.map((c) => [c, procStat(running[c]!.pid).cpu]));
    const a0 = apiCpu();
    const peaks = Object.fromEntries(components.map((c) => [c, rssPeak(running[c]!.pid)]));
    const t0 = now();
    const churn = startChurn(ctx.layout, { podsPerSecond: CHURN, admin, log: (m) => phase(m) });
    await sleep(CHURN_SECONDS * 1000);
    await churn.stop();
    const churnS = (now() - t0) / 1000;
    for (const c of components) f[`${c}.cpuChurnCores`] = round((procStat(running[c]!.pid).cpu - c0[c]!) / churnS, 3);
    f['api.cpuChurnCores'] = round((apiCpu() - a0) / churnS, 3);
    raw.churnRestarts = churn.restarts;
    phase(`${subject.name}: waiting for the workload to settle`);
    await waitSettled(admin, ctx.layout);
    await sleep(5000);
    for (const c of components) f[`${c}.rssPeakMb`] = round(peaks[c]!.stop(), 1);
    baseline.stop();
    const { adds } = await ask<{ adds: Array<{ authority: string; ip: string; times: number[] }> }>(clients, {
      cmd: 'adds',
    });
    const prop: number[] = [];
    let unmatched = 0;
    for (const a of adds) {
      const t = baseline.seen.get(`${a.authority} ${a.ip}`);
      if (t === undefined || t < 0) {
        unmatched++;
        continue;
      }
      for (const s of a.times) prop.push(s - t);
    }
    prop.sort((a, b) => a - b);
    f['destination.propagationP50Ms'] = round(percentile(prop, 50));
    f['destination.propagationP99Ms'] = round(percentile(prop, 99));
    raw.propagationSamples = prop.length;
    raw.propagationUnmatched = unmatched;

    // every Get stream's view against the API's EndpointSlices
    phase(`${subject.name}: views against the API`);
    const truth = await apiEndpoints(admin);
    const { views } = await ask<{ views: Views }>(clients, {
      cmd: 'views',
    });
    const div = compareViews(views, truth);
    f['views.divergingStreams'] = div.diverging;
    f['views.missingEndpoints'] = div.missing;
    f['views.extraEndpoints'] = div.extra;
    if (div.examples.length) raw.divergence = div.examples;
    const { stats } = await ask<{ stats: Record<string, { errors: number; reopens: number }> }>(clients, {
      cmd: 'stats',
    });
    raw.streamStats = stats;
    await ask(clients, { cmd: 'close' });
    clients.send({ cmd: 'exit' });

    // the restart storm: every pod certifies at once
    if (running.identity) {
      const id = running.identity;
      phase(`${subject.name}: certify-all storm (${ctx.size} pods)`);
      const current = await listPods(admin);
      const tokens = new Map<string, string>();
      for (const p of current) {
        const key = `${p.ns}/${p.sa}`;
        if (!tokens.has(key))
          tokens.set(
            key,
            await createServiceAccountToken({ namespace: p.ns, serviceAccount: p.sa, audiences: AUDIENCES }),
          );
      }
      const callers = current.map((p) => ({
        identity: `${p.sa}.${p.ns}.serviceaccount.identity.${CP_NS}.cluster.local`,
        token: tokens.get(`${p.ns}/${p.sa}`)!,
      }));
      const gen = startDriven({
        go: 'identity-certify',
        script: '',
        label: `${subject.name} storm`,
        queueErrors: true,
        requireGo: true,
      });
      ctx.children.push(gen.child);
      await gen.next();
      const i0 = procStat(id.pid).cpu;
      const s0 = apiCpu();
      const peak = rssPeak(id.pid, 100);
      const storm = await ask<{
        ms: number;
        errors: number;
        failed: number;
        latencies: number[];
        reasons: Record<string, number>;
        attempts: number;
        model: string;
      }>(gen, {
        cmd: 'storm',
        port: id.grpcPort,
        callers,
      });
      f['identity.rssStormPeakMb'] = round(peak.stop(), 1);
      f['identity.cpuStormS'] = round(procStat(id.pid).cpu - i0);
      f['api.cpuStormS'] = round(apiCpu() - s0);
      f['identity.stormMs'] = round(storm.ms, 0);
      f['identity.stormErrors'] = storm.errors;
      f['identity.stormFailed'] = storm.failed;
      const lat = storm.latencies.sort((a, b) => a - b);
      f['identity.stormP50Ms'] = round(percentile(lat, 50));
      f['identity.stormP99Ms'] = round(percentile(lat, 99));
      raw.stormCallers = callers.length;
      raw.stormErrorReasons = storm.reasons;
      raw.stormAttempts = storm.attempts;
      raw.stormClientModel = storm.model;
      gen.send({ cmd: 'exit' });
    }
  } finally {
    for (const c of components) {
      const s = running[c];
      if (s) raw[`${c}.stopped`] = await s.stop();
    }
  }
  const described = Object.fromEntries(components.map((c) => [c, subject.describe(c)]));
  return { figures: f, raw: { ...raw, programs: described } };
}

/** Admission through the real API server at INJECT_RATE pod creations/s (minimesh's injector). */
async function measureInjector(ctx: Ctx): Promise<SizeResult> {
  const { admin } = ctx;
  const ns = `mm-scale-inject-${Date.now().toString(36)}`;
  const hook = `${ns}.minimesh.io`;
  const f: Record<string, number> = {};
  const dir = join(ctx.dir, 'injector');
  mkdirSync(dir, { recursive: true });
  // Signed by a CA of its own, as a server certificate: what kube-apiserver (Go) wants of a webhook.
  const cert = makeTestCert({ cn: 'injector', ca: makeTestCa({ cn: 'scale-injector-ca', days: 1 }), days: 1 });
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ identityTrustAnchorsPEM: readFileSync(ctx.pki.caCrt, 'utf8') }));
  const [port, adminPort] = [await freePort(), await freePort()];
  const entry = join(repo, 'packages', 'injector', 'bundle', 'main.mjs');
  const child = spawn(
    process.execPath,
    [
      existsSync(entry) ? entry : join(repo, 'packages', 'injector', 'dist', 'main.js'),
      '--addr',
      `127.0.0.1:${port}`,
      '--admin-addr',
      `127.0.0.1:${adminPort}`,
      '--tls-cert',
      cert.certFile,
      '--tls-key',
      cert.keyFile,
      '--config',
      config,
      '--kubeconfig',
      ctx.kubeconfig,
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  ctx.children.push(child);
  const exposure = await exposeHostPort(port);
  try {
    for (let i = 0; ; i++) {
      if (
        (await fetch(`http://127.0.0.1:${adminPort}/ready`).then(
          (r) => r.status,
          () => 0,
        )) === 200
      )
        break;
      if (i > 3000) throw new Error('the injector was not ready in 30 s');
      await sleep(10);
    }
    await admin.request('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns, annotations: { 'minimesh.io/inject': 'enabled' } },
    });
    await createNamespace(ns);
    await admin.request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: hook },
      webhooks: [
        {
          name: hook,
          clientConfig: {
            url: `https://127.0.0.1:${port}/`,
            caBundle: Buffer.from(cert.ca).toString('base64'),
          },
          rules: [
            { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' },
          ],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 10,
        },
      ],
    });
    const pod = (name: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns, labels: { app: 'inject-bench' } },
      spec: {
        nodeSelector: { ...SIMULATED_NODE_LABELS },
        tolerations: [{ ...SIMULATED_NODE_TOLERATION }],
        terminationGracePeriodSeconds: 0,
        containers: [
          { name: 'app', image: 'registry.k8s.io/pause:3.10', ports: [{ name: 'http', containerPort: 8080 }] },
        ],
      },
    });
    // the API server learns of a new webhook configuration through an informer: wait for the first injection
    for (let i = 0; ; i++) {
      const p = await admin.request<KubeObject>('POST', `/api/v1/namespaces/${ns}/pods`, pod(`warm-${i}`));
      if (p.spec.initContainers?.length) break;
      if (i > 100) throw new Error('the webhook was never called');
      await sleep(200);
    }
    // pods at a constant rate (open loop) over one kept-alive HTTP/2 connection, as a controller
    // creates them (a TLS handshake per pod would measure the client)
    const kube = createKubeClient(await loadKubeConfig({ path: ctx.kubeconfig }), {
      userAgent: 'bench-scale-pods',
      rateLimit: { qps: INJECT_RATE * 4, burst: INJECT_RATE * 4 },
    });
    const createPods = async (namespace: string, tag: string) => {
      const total = INJECT_RATE * INJECT_SECONDS;
      const lat: number[] = [];
      let injected = 0;
      let errors = 0;
      const started = now();
      const inflight: Promise<void>[] = [];
      for (let i = 0; i < total; i++) {
        const wait = started + (i * 1000) / INJECT_RATE - now();
        if (wait > 0) await sleep(wait);
        const t = now();
        const body = { ...pod(`${tag}-${i}`), metadata: { ...pod(`${tag}-${i}`).metadata, namespace } };
        inflight.push(
          kube.request<KubeObject>('POST', `/api/v1/namespaces/${namespace}/pods`, body).then(
            (r) => {
              if (r.status !== 201) return void errors++;
              lat.push(now() - t);
              if (r.body.spec?.initContainers?.length) injected++;
            },
            () => void errors++,
          ),
        );
      }
      await Promise.all(inflight);
      lat.sort((a, b) => a - b);
      return { lat, injected, errors };
    };
    // the baseline: the same pods into a namespace the webhook does not select
    phase(`injector: baseline, ${INJECT_RATE} pod creations/s for ${INJECT_SECONDS} s without the webhook`);
    await createNamespace(`${ns}-base`);
    const base = await createPods(`${ns}-base`, 'b');
    f['injector.baselineCreateP50Ms'] = round(percentile(base.lat, 50));
    f['injector.baselineCreateP99Ms'] = round(percentile(base.lat, 99));
    await admin.request('DELETE', `/api/v1/namespaces/${ns}-base`).catch(() => undefined);
    await sleep(5000);
    phase(`injector: ${INJECT_RATE} pod creations/s for ${INJECT_SECONDS} s`);
    const metrics0 = await fetch(`http://127.0.0.1:${adminPort}/metrics`).then((r) => r.text());
    const { lat, injected, errors } = await createPods(ns, 'p');
    await kube.close();
    const metrics1 = await fetch(`http://127.0.0.1:${adminPort}/metrics`).then((r) => r.text());
    f['injector.createP50Ms'] = round(percentile(lat, 50));
    f['injector.createP99Ms'] = round(percentile(lat, 99));
    f['injector.injected'] = injected;
    f['injector.errors'] = errors;
    // the webhook's own time, from its histogram: the bucket where 50 % and 99 % of the requests fall
    const buckets = (text: string) =>
      [...text.matchAll(/minimesh_injector_admission_duration_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} (\d+)/g)].reduce(
        (m, [, le, n]) => m.set(le!, (m.get(le!) ?? 0) + Number(n)),
        new Map<string, number>(),
      );
    const b0 = buckets(metrics0);
    const b1 = buckets(metrics1);
    const les = [...b1.keys()].filter((le) => le !== '+Inf').sort((a, b) => Number(a) - Number(b));
    const count = (b1.get('+Inf') ?? 0) - (b0.get('+Inf') ?? 0);
    const quantile = (q: number) => {
      for (const le of les) if ((b1.get(le) ?? 0) - (b0.get(le) ?? 0) >= q * count) return Number(le) * 1000;
      return Infinity;
    };
    f['injector.serverP50LeMs'] = quantile(0.5);
    f['injector.serverP99LeMs'] = quantile(0.99);
    f['injector.rssMb'] = round(procStat(child.pid as number).rssMb, 1);
  } finally {
    await admin
      .request('DELETE', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${hook}`)
      .catch(() => undefined);
    await admin.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    await exposure.close();
    child.kill('SIGTERM');
  }
  return { figures: f, raw: {} };
}

async function main(): Promise<void> {
  const children: ChildProcess[] = [];
  watchdog(4 * 3600_000, () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  });
  const peer = linkerd(process.env.BENCH_LINKERD_CONTROLLER, process.env.BENCH_LINKERD_POLICY);
  const subjects: Subject[] = [minimesh, ...(peer ? [peer] : [])];
  if (!peer) phase("Linkerd's controllers not given (BENCH_LINKERD_CONTROLLER, BENCH_LINKERD_POLICY): minimesh alone");
  phase('ensureCluster');
  const cluster = await ensureCluster();
  const admin = adminClient();
  const dir = mkdtempSync(join(tmpdir(), 'mm-bench-scale-'));
  const file = join(here, 'runs.json');
  const runs = loadRuns(file);
  const id = process.env.BENCH_SCALE_RUN ?? new Date().toISOString().replace(/[:.]/g, '-');
  let run = runs.find((r) => r.id === id);
  if (!run) {
    run = newScaleRun(id);
    runs.push(run);
  }
  try {
    // CRDs: minimesh's policy.minimesh.io; Linkerd's when a file of them is given (BENCH_LINKERD_CRDS)
    for (const crd of policyCrds())
      await admin
        .request(
          'PATCH',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}?fieldManager=bench-scale&force=true`,
          crd,
          'application/apply-patch+yaml',
        )
        .catch(async () => await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd));
    const policyGroups = ['policy.minimesh.io'];
    if (process.env.BENCH_LINKERD_CRDS) {
      await applyCrdFile(admin, process.env.BENCH_LINKERD_CRDS);
      if (peer?.has('policy')) policyGroups.push('policy.linkerd.io');
    } else if (peer) {
      throw new Error(
        "BENCH_LINKERD_CRDS: Linkerd's controllers need Linkerd's CRDs (a YAML file of them, e.g. rendered from linkerd-crds)",
      );
    }
    await sleep(2000);
    await createNamespace(CP_NS);
    if (peer?.has('policy')) {
      // Linkerd's policy controller makes the linkerd-destination Deployment the owner of its Lease and
      // exits when there is none: one with no replicas, as its chart's Deployment stands in for here.
      await admin
        .request('POST', `/apis/apps/v1/namespaces/${CP_NS}/deployments`, {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'linkerd-destination', namespace: CP_NS },
          spec: {
            replicas: 0,
            selector: { matchLabels: { app: 'linkerd-destination' } },
            template: {
              metadata: { labels: { app: 'linkerd-destination' } },
              spec: { containers: [{ name: 'destination', image: 'registry.k8s.io/pause:3.10' }] },
            },
          },
        })
        .catch((err: unknown) => {
          if (!/already exists|409/i.test(String((err as Error).message))) throw err;
        });
    }
    const pki = makeTutorialPki(dir);
    for (const size of SIZES) {
      phase(`size ${size}: simulated nodes and workload`);
      await ensureSimulatedNodes({ nodes: Math.max(1, Math.ceil(size / 100)), log: phase });
      const t0 = now();
      // The pods look meshed to both: the labels both injectors add (Linkerd's policy controller
      // indexes only pods labelled linkerd.io/control-plane-ns) and, since Linkerd's destination then
      // reads a meshed pod's proxy ports from its linkerd-proxy container's environment (and sends no
      // endpoint of a pod without one), that container as Linkerd's injector writes it.
      const podLabels = { 'minimesh.io/control-plane-ns': CP_NS, 'linkerd.io/control-plane-ns': CP_NS };
      const layout = await applyWorkload(
        { pods: size, policyGroups, podLabels, sidecars: [LINKERD_PROXY_CONTAINER] },
        { log: phase, timeoutMs: 30 * 60_000 },
      );
      const ctx: Ctx = { admin, dir, kubeconfig: cluster.kubeconfigPath, pki, layout, size, children };
      const result: Record<string, SizeResult> = {};
      // BENCH_SCALE_ONLY=reliability: only the reliability runs, added to the run's figures (e.g. after
      // a fix to them), the size's other figures kept as they were.
      const only = process.env.BENCH_SCALE_ONLY;
      if (only !== 'reliability')
        run.sizes[String(size)] = { workloadReadyS: round((now() - t0) / 1000, 0), subjects: result };
      for (const subject of only === 'reliability' ? [] : subjects) {
        result[subject.name] = await measureSubject(subject, ctx);
        saveRuns(file, runs);
        console.log(`size ${size} ${subject.name}: ${JSON.stringify(result[subject.name]!.figures)}`);
      }
      if (process.env.BENCH_SCALE_INJECTOR !== '0' && only !== 'reliability') {
        result.injector = await measureInjector(ctx);
        console.log(`size ${size} injector: ${JSON.stringify(result.injector.figures)}`);
      }
      saveRuns(file, runs);
      if (process.env.BENCH_SCALE_RELIABILITY !== '0' && size === Math.max(...SIZES)) {
        const services = (await listServices(admin)).map((s) => ({ authority: s.authority, ip: s.ip, port: s.port }));
        const pods = (await listPods(admin)).map((p) => ({ ns: p.ns, name: p.name, port: 8080 }));
        const rctx: ReliabilityContext = {
          admin,
          layout,
          start: {
            kubeconfig: cluster.kubeconfigPath,
            controllerNamespace: CP_NS,
            issuerCrt: pki.issuerCrt,
            issuerKey: pki.issuerKey,
            trustAnchors: pki.caCrt,
            dir,
            podName: 'scale',
          },
          services,
          pods,
          clients: () => {
            const d = startDriven({ go: 'scale-streams', script: '', label: 'reliability clients', requireGo: true });
            children.push(d.child);
            return d;
          },
          clientCount: CLIENTS,
          churnPodsPerS: CHURN,
          churnSeconds: CHURN_SECONDS,
          waitSettled: () => waitSettled(admin, layout),
          track: (s) => children.push(s.child),
        };
        run.reliability = { size };
        run.reliability.leaderKill = await leaderKill(rctx);
        console.log(`leader kill at ${size} pods: ${JSON.stringify(run.reliability.leaderKill)}`);
        saveRuns(file, runs);
        run.reliability.apiServerRestart = await apiServerRestart(rctx);
        console.log(`API server restart at ${size} pods: ${JSON.stringify(run.reliability.apiServerRestart)}`);
        saveRuns(file, runs);
      }
    }
    console.log(`\nrun ${id} saved to ${file}; draw it: npx tsx bench/scale/report.ts ${id}`);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

function newScaleRun(id: string): ScaleRun {
  const { date, commit, node } = newRun('scale', 'the control plane at scale');
  return {
    id,
    date,
    commit,
    node,
    settings: { clients: CLIENTS, churnPodsPerS: CHURN, churnSeconds: CHURN_SECONDS, injectRate: INJECT_RATE },
    sizes: {},
  };
}

async function applyCrdFile(admin: KubeClient, path: string): Promise<void> {
  const { parseAllDocuments } = await import('yaml');
  for (const doc of parseAllDocuments(readFileSync(path, 'utf8'))) {
    const crd = doc.toJS() as (KubeObject & { spec?: { group?: string } }) | null;
    if (!crd || crd.kind !== 'CustomResourceDefinition') continue;
    // The Gateway API's CRDs are the ecosystem's, not Linkerd's: when the cluster has them (minimesh's
    // chart and tests install v1.6.3, whose TCPRoute and TLSRoute store v1), Linkerd's older copies
    // cannot replace them (a stored version may not leave spec.versions), and it reads the newer ones.
    if (
      crd.spec?.group === 'gateway.networking.k8s.io' &&
      (await admin.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`))
    ) {
      phase(`Linkerd's CRDs: ${crd.metadata.name} is in the cluster already, kept as it is`);
      continue;
    }
    await admin.request(
      'PATCH',
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}?fieldManager=bench-scale&force=true`,
      crd,
      'application/apply-patch+yaml',
    );
  }
}

await main();
