// destination benchmark (npm run bench -w @minimesh/destination).
//
// 1. Fan-out: 1,000 concurrent Get streams (real gRPC over loopback, 20 client connections) on one
//    Service (the clients in a worker thread); one endpoint change applied to the index; time until
//    each stream has the update.
//    Reported as p50/p99/max over all streams and rounds, next to a baseline measured in the same
//    run: a bare gRPC server that writes one pre-built Update to the same 1,000 streams.
// 2. Index memory per 1,000 pods: realistic Pod and EndpointSlice objects are transformed into the
//    index's records and applied; the retained heap is measured with --expose-gc, next to the heap the
//    same objects take when kept whole (what an informer without transforms would hold).
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { Server, ServerCredentials, type ServerWritableStream } from '@grpc/grpc-js';
import { parsePortRanges } from '@minimesh/config';
import { createKubeClient, loadKubeConfig } from '@minimesh/kube';
import {
  createDestinationHandlers,
  createDestinationMetrics,
  destinationServiceDefinition,
  startDestination,
  EndpointIndex,
  toPodRecord,
  toServiceRecord,
  toSliceRecord,
} from '@minimesh/destination';
import { destination } from '@minimesh/proto';
import { createLogger, createRegistry } from '@minimesh/runtime';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 40);
const PODS = Number(process.env.BENCH_PODS ?? 10_000);
const WARMUP = 3;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench does)');

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

function pod(i: number): Record<string, unknown> {
  const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  const rs = `web-${i % 50}-7d4b9c8f5`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${rs}-${i.toString(36).padStart(5, 'x')}`,
      namespace: `ns-${i % 20}`,
      uid: `7f9c2a4e-1b3d-4c5e-8f6a-${i.toString(16).padStart(12, '0')}`,
      resourceVersion: String(100000 + i),
      creationTimestamp: '2026-11-21T10:00:00Z',
      labels: {
        app: `web-${i % 50}`,
        'pod-template-hash': '7d4b9c8f5',
        'minimesh.io/control-plane-ns': 'minimesh',
        'minimesh.io/workload-ns': `ns-${i % 20}`,
        version: 'v1',
      },
      annotations: {
        'minimesh.io/proxy-version': '0.1.0',
        'minimesh.io/created-by': 'minimesh/injector 0.1.0',
        'minimesh.io/trust-root-sha256': 'a'.repeat(64),
      },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: rs,
          uid: 'a1b2c3d4-0000-4000-8000-000000000001',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      serviceAccountName: `web-${i % 50}`,
      nodeName: `node-${i % 30}`,
      containers: [
        {
          name: 'app',
          image: 'registry.example/web:1.2.3',
          ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
          resources: { requests: { cpu: '100m', memory: '64Mi' } },
        },
      ],
      initContainers: [
        {
          name: 'minimesh-proxy',
          image: 'ghcr.io/minimesh/proxy:0.1.0',
          restartPolicy: 'Always',
          ports: [{ name: 'minimesh-admin', containerPort: 4191 }],
        },
      ],
    },
    status: {
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      hostIP: '192.168.0.10',
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-21T10:00:05Z' },
        { type: 'ContainersReady', status: 'True', lastTransitionTime: '2026-11-21T10:00:05Z' },
      ],
      containerStatuses: [
        {
          name: 'app',
          ready: true,
          restartCount: 0,
          image: 'registry.example/web:1.2.3',
          imageID: 'sha256:' + 'b'.repeat(64),
          state: { running: { startedAt: '2026-11-21T10:00:04Z' } },
        },
      ],
    },
  };
}

function slicesFor(pods: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  // 100 endpoints per slice, as the endpointslice controller does
  const out: Array<Record<string, unknown>> = [];
  for (let i = 0; i < pods.length; i += 100) {
    const chunk = pods.slice(i, i + 100) as Array<{
      metadata: { name: string; namespace: string };
      status: { podIP: string };
      spec: { nodeName: string };
    }>;
    out.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `svc-${i / 100}-abcde`,
        namespace: 'ns-0',
        labels: {
          'kubernetes.io/service-name': `svc-${i / 100}`,
          'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
        },
      },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      endpoints: chunk.map((p) => ({
        addresses: [p.status.podIP],
        conditions: { ready: true, serving: true, terminating: false },
        nodeName: p.spec.nodeName,
        zone: 'zone-a',
        targetRef: { kind: 'Pod', namespace: p.metadata.namespace, name: p.metadata.name, uid: 'x' },
      })),
    });
  }
  return out;
}

function heapUsed(): number {
  for (let i = 0; i < 4; i++) gc?.();
  return process.memoryUsage().heapUsed;
}

function memoryBench(): { recordsPerPod: number; rawPerPod: number } {
  const before = heapUsed();
  const index = new EndpointIndex();
  {
    // built in batches so the raw objects never all live at once
    const batch = 1000;
    for (let i = 0; i < PODS; i += batch) {
      const pods = Array.from({ length: Math.min(batch, PODS - i) }, (_, k) => pod(i + k));
      for (const p of pods) index.apply('pod', toPodRecord(p));
      const slices = slicesFor(pods).map((s, k) => ({
        ...s,
        metadata: {
          ...(s.metadata as object),
          name: `svc-${(i + k * 100) / 100}-abcde`,
          labels: { 'kubernetes.io/service-name': `svc-${(i + k * 100) / 100}` },
        },
      }));
      for (const s of slices) index.apply('endpointslice', toSliceRecord(s));
    }
  }
  const afterRecords = heapUsed();
  const recordsPerPod = (afterRecords - before) / PODS;
  if (index.counts().pod !== PODS) throw new Error('index lost pods');

  const raw: unknown[] = [];
  const beforeRaw = heapUsed();
  for (let i = 0; i < PODS; i += 1000) {
    const pods = Array.from(
      { length: Math.min(1000, PODS - i) },
      (_, k) => JSON.parse(JSON.stringify(pod(i + k))) as Record<string, unknown>,
    );
    raw.push(...pods, ...slicesFor(pods).map((s) => JSON.parse(JSON.stringify(s)) as unknown));
  }
  const afterRaw = heapUsed();
  const rawPerPod = (afterRaw - beforeRaw) / PODS;
  if (raw.length === 0 || index.counts().pod === 0) throw new Error('unreachable');
  return { recordsPerPod, rawPerPod };
}

interface FanOutResult {
  latencies: number[];
  perRoundMax: number[];
  /** When each measured round's change started. */
  t0s: number[];
}

const now = () => performance.timeOrigin + performance.now();

async function measure(
  port: number,
  path: string,
  change: (round: number) => void | Promise<void>,
  rounds = ROUNDS,
): Promise<FanOutResult> {
  const latencies: number[] = [];
  const perRoundMax: number[] = [];
  const t0s: number[] = [];
  const worker = new Worker(new URL('./clients.mjs', import.meta.url), {
    workerData: { port, path, streams: STREAMS, connections: CONNECTIONS },
  });
  const messages: Array<{ ready?: boolean; times?: number[] }> = [];
  let wake: (() => void) | undefined;
  worker.on('message', (m: { ready?: boolean; times?: number[] }) => {
    messages.push(m);
    wake?.();
  });
  worker.on('error', (e) => {
    throw e;
  });
  const nextMessage = async () => {
    while (messages.length === 0) await new Promise<void>((r) => (wake = r));
    return messages.shift() as { ready?: boolean; times?: number[] };
  };
  await nextMessage(); // ready
  // WARMUP unrecorded rounds first (JIT, connection windows), then ROUNDS measured ones
  for (let round = -WARMUP; round < rounds; round++) {
    const t0 = now();
    await change(round + WARMUP);
    const { times = [] } = await nextMessage();
    if (round >= 0) {
      t0s.push(t0);
      for (const t of times) latencies.push(t - t0);
      perRoundMax.push(Math.max(...times) - t0);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  worker.postMessage({ stop: true });
  await new Promise((r) => worker.once('exit', r));
  return { latencies: latencies.sort((a, b) => a - b), perRoundMax: perRoundMax.sort((a, b) => a - b), t0s };
}

async function listen(server: Server): Promise<number> {
  return await new Promise((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
}

/** Baseline: the same streams, each written one pre-built Update by a bare server. */
async function baselineFanOut(): Promise<FanOutResult> {
  const calls = new Set<ServerWritableStream<destination.GetDestination, destination.Update>>();
  const server = new Server();
  const hello: destination.Update = { update: { $case: 'noEndpoints', value: { exists: true } } };
  server.addService(destination.DestinationService, {
    get: (call: ServerWritableStream<destination.GetDestination, destination.Update>) => {
      calls.add(call);
      call.on('cancelled', () => calls.delete(call));
      call.write(hello);
    },
    getProfile: (call: ServerWritableStream<destination.GetDestination, destination.DestinationProfile>) => call.end(),
  });
  const port = await listen(server);
  const result = await measure(port, 'web.bench.svc.cluster.local:80', (round) => {
    const u: destination.Update = {
      update: {
        $case: 'add',
        value: {
          metricLabels: { service: 'web', namespace: 'bench' },
          addrs: [
            {
              addr: { ip: { ip: { $case: 'ipv4', value: 0x0ac80000 + round } }, port: 8080 },
              weight: 10000,
              metricLabels: {},
            },
          ],
        },
      },
    };
    for (const c of calls) c.write(u);
  });
  server.forceShutdown();
  return result;
}

async function destinationFanOut(): Promise<FanOutResult> {
  const index = new EndpointIndex();
  const metrics = createDestinationMetrics(createRegistry());
  index.apply(
    'service',
    toServiceRecord({
      metadata: { name: 'web', namespace: 'bench' },
      spec: { clusterIP: '10.96.0.1', ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    }),
  );
  const pods = Array.from({ length: 20 }, (_, i) => pod(i));
  for (const p of pods)
    index.apply('pod', toPodRecord({ ...p, metadata: { ...(p.metadata as object), namespace: 'bench' } }));
  const sliceFor = (extra: number) =>
    toSliceRecord({
      metadata: { name: 'web-abcde', namespace: 'bench', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [
        ...pods.map((p) => ({
          addresses: [(p as { status: { podIP: string } }).status.podIP],
          conditions: { ready: true },
          targetRef: { kind: 'Pod', namespace: 'bench', name: (p.metadata as { name: string }).name },
        })),
        { addresses: [`10.200.0.${extra % 250}`], conditions: { ready: true } },
      ],
    });
  index.apply('endpointslice', sliceFor(255));
  const server = new Server();
  server.addService(
    destinationServiceDefinition,
    createDestinationHandlers({
      index,
      metrics,
      logger: createLogger({ name: 'bench', level: 'silent' }),
      streamQueueCapacity: 100,
      translator: {
        controllerNamespace: 'minimesh',
        identityTrustDomain: 'cluster.local',
        clusterDomain: 'cluster.local',
        defaultOpaquePorts: parsePortRanges('b', '3306'),
        enableH2Upgrade: true,
      },
    }),
  );
  const port = await listen(server);
  // each round replaces the extra endpoint: every stream gets one remove and one add; we time the first
  const result = await measure(port, 'web.bench.svc.cluster.local:80', (round) =>
    index.apply('endpointslice', sliceFor(round)),
  );
  server.forceShutdown();
  return result;
}

/**
 * BENCH_CLUSTER=1: the same 1,000 streams, but each change is a PUT of the EndpointSlice to the local
 * cluster's API server and reaches destination through its watch. Baseline: a bare watch on the same
 * slices, started from the same clock, i.e. what the API server alone takes to deliver the change.
 */
async function clusterFanOut(): Promise<{ dst: FanOutResult; watch: number[] }> {
  const lc = await import('@minimesh/local-cluster');
  const info = await lc.ensureCluster();
  const admin = lc.adminClient();
  const ns = `mm-dst-bench-${Date.now().toString(36)}`;
  await lc.createNamespace(ns);
  const slices = `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`;
  const body = (round: number) => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: 'web-a',
      namespace: ns,
      labels: { 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': 'destination-bench' },
    },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: [
      ...Array.from({ length: 20 }, (_, i) => ({ addresses: [`10.23.206.${i + 1}`] })),
      { addresses: [`10.23.207.${round % 250}`] },
    ],
  });
  const logger = createLogger({ name: 'bench', level: 'silent' });
  let dst: Awaited<ReturnType<typeof startDestination>> | undefined;
  let watchCtrl: AbortController | undefined;
  try {
    await admin.request('POST', `/api/v1/namespaces/${ns}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: ns },
      spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    await admin.request('POST', slices, body(249));
    const kc = await loadKubeConfig({ path: info.kubeconfigPath });
    dst = await startDestination({
      api: createKubeClient(kc, { userAgent: 'minimesh-destination/bench' }),
      logger,
      addr: '127.0.0.1:0',
      controllerNamespace: ns,
      clusterDomain: 'cluster.local',
      identityTrustDomain: 'cluster.local',
      defaultOpaquePorts: [],
      enableH2Upgrade: true,
      streamQueueCapacity: 100,
      lease: { name: 'bench', identity: 'bench', durationMs: 30_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
    });
    await dst.synced();
    while (dst.index.resolve({ namespace: ns, service: 'web', port: 80 }).endpoints.length < 21)
      await new Promise((r) => setTimeout(r, 20));
    // the baseline watcher: when did the API server deliver each round's new address
    const seen = new Map<string, number>();
    watchCtrl = new AbortController();
    const watcher = createKubeClient(kc, { userAgent: 'bench-baseline-watch' });
    void watcher
      .watch(
        slices,
        { resourceVersion: '0', allowWatchBookmarks: true },
        (_type, obj) => {
          const t = now();
          for (const e of (obj as { endpoints?: Array<{ addresses: string[] }> }).endpoints ?? [])
            for (const a of e.addresses) if (!seen.has(a)) seen.set(a, t);
        },
        { signal: watchCtrl.signal },
      )
      .catch(() => undefined)
      .finally(() => void watcher.close());
    await new Promise((r) => setTimeout(r, 200));
    const rounds = Math.min(ROUNDS, 20);
    const result = await measure(
      dst.grpcPort,
      `web.${ns}.svc.cluster.local:80`,
      async (round) => {
        seen.delete(`10.23.207.${round % 250}`);
        await admin.request('PUT', `${slices}/web-a`, body(round));
      },
      rounds,
    );
    const watch = result.t0s
      .map((t0, i) => (seen.get(`10.23.207.${(i + WARMUP) % 250}`) ?? NaN) - t0)
      .sort((a, b) => a - b);
    return { dst: result, watch };
  } finally {
    watchCtrl?.abort();
    await dst?.close();
    await admin.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
  }
}

async function main(): Promise<void> {
  console.log(
    `destination bench: ${STREAMS} Get streams over ${CONNECTIONS} connections, ${ROUNDS} endpoint changes; index of ${PODS} pods`,
  );
  const base = await baselineFanOut();
  const dst = await destinationFanOut();
  const row = (name: string, r: FanOutResult) =>
    `${name.padEnd(34)} p50 ${fmt(percentile(r.latencies, 50)).padStart(10)}  p99 ${fmt(percentile(r.latencies, 99)).padStart(10)}  all-streams p50 ${fmt(percentile(r.perRoundMax, 50)).padStart(10)}  max ${fmt(r.perRoundMax[r.perRoundMax.length - 1] ?? NaN).padStart(10)}`;
  console.log('\nTime from one endpoint change until each stream has it:');
  console.log(row('baseline (bare gRPC fan-out)', base));
  console.log(row('destination (index+translate+queue)', dst));
  console.log(
    `ratio destination/baseline p99: ${(percentile(dst.latencies, 99) / percentile(base.latencies, 99)).toFixed(2)}x   goal: p99 < 100 ms`,
  );

  if (process.env.BENCH_CLUSTER === '1') {
    const { dst: viaApi, watch } = await clusterFanOut();
    console.log("\nThrough the local cluster's API server (PUT EndpointSlice → watch → destination → 1,000 streams):");
    console.log(
      `bare watch delivery (baseline)     p50 ${fmt(percentile(watch, 50)).padStart(10)}  p99 ${fmt(percentile(watch, 99)).padStart(10)}`,
    );
    console.log(row('destination end to end', viaApi));
    console.log(
      `ratio destination/watch p50: ${(percentile(viaApi.latencies, 50) / percentile(watch, 50)).toFixed(2)}x`,
    );
  }

  const mem = memoryBench();
  console.log('\nIndex memory:');
  console.log(
    `records (pods + slice endpoints): ${(mem.recordsPerPod / 1024).toFixed(2)} KB per pod = ${((mem.recordsPerPod * 1000) / 1024 / 1024).toFixed(2)} MB per 1,000 pods   goal: < 3 KB per pod`,
  );
  console.log(
    `whole objects (baseline):         ${(mem.rawPerPod / 1024).toFixed(2)} KB per pod = ${((mem.rawPerPod * 1000) / 1024 / 1024).toFixed(2)} MB per 1,000 pods`,
  );
  console.log(`ratio records/whole objects: ${(mem.recordsPerPod / mem.rawPerPod).toFixed(2)}`);
}

await main();
process.exit(0);
