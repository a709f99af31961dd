// Micro-benchmark of the policy controller at cluster sizes (issue 29, docs/policy.md "At scale"): the
// controller as main.ts starts it (startPolicy: informers, index, status writer holding its Lease),
// against the in-memory API server of @minimesh/kube/testing holding the scale bench's objects
// (@minimesh/local-cluster's generator: namespaces of 20 Deployments of 10 pods, each with a Service, a
// Server, an AuthorizationPolicy and an HTTPRoute), and the policy streams opened through the tree's
// own gRPC handlers on fake calls that encode every message as grpc-js does. Per size it reports the
// CPU to start (list and index), to open every stream (one inbound WatchPort per pod, 10 clients × one
// outbound Watch per Service by ClusterIP:port, as bench/scale does), per pod replacement during churn
// (the old pod marked deleted then deleted, the new one added Pending, scheduled, Running with an IP,
// then its proxy's WatchPort: watch events paced as a 5 pods/s churn, so the status writer's debounce
// sees what it sees in a cluster) and for one Server change until its 10 pods' watches have it.
//
//   npx tsx bench/policy/churn.bench.ts                    this tree, sizes 500,1000,2000,5000
//   npx tsx bench/policy/churn.bench.ts --ab <commit>      packages/policy/src of <commit> and this
//                                                          tree, side by side, with the ratio
// BENCH_SIZES (500,1000,2000,5000), BENCH_CHURN_PODS (60 replacements), BENCH_EVENT_GAP_MS (40 ms
// between watch events: 5 events per replacement at 5 pods/s).
//
// Each (tree, size) runs in its own process, so neither shares a heap or JIT state with the other. The
// in-memory API server's own CPU (cloning objects into watches) is timed and taken off. Figures are for
// comparing trees in the same run on the same machine, never absolute targets.
import { execFileSync, fork } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deploymentObjects, namespaceObjects, workloadLayout } from '@minimesh/local-cluster';
import { inbound, outbound, toTcpAddress } from '@minimesh/proto';
import { createFakeKubeClient, type KubeObject } from '@minimesh/kube/testing';
import { createLogger } from '@minimesh/runtime';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const SIZES = (process.env.BENCH_SIZES ?? '500,1000,2000,5000').split(',').map(Number);
const CHURN_PODS = Number(process.env.BENCH_CHURN_PODS ?? 60);
const GAP_MS = Number(process.env.BENCH_EVENT_GAP_MS ?? 40);
const CLIENTS = 10;
const ROUNDS = 5;

interface Result {
  size: number;
  startMs: number;
  openMs: number;
  churnMsPerPod: number;
  messagesPerPod: number;
  statusPasses: number;
  serverChangeMs: number;
  serverChangeWallMs: number;
  serverChangeMessages: number;
  heapMb: number;
}

// ---------------------------------------------------------------------------------------------------
// The child: one tree, one size.

type Json = Record<string, unknown>;

/** What the bench needs of a tree's packages/policy/src (the same names in every version measured). */
interface Impl {
  startPolicy: (opts: Json) => Promise<{
    index: { watchCounts(): { inbound: number; outbound: number } };
    metrics: unknown;
    status: { writer: { pass(): Promise<number> }; elector: { isLeader: boolean } } | undefined;
    synced(): Promise<void>;
    close(): Promise<void>;
  }>;
  createInboundHandlers: (opts: Json) => { watchPort(call: unknown): void };
  createOutboundHandlers: (opts: Json) => { watch(call: unknown): void };
  /** The service definitions the tree registers (older trees register the generated ones). */
  INBOUND_SERVICE?: typeof inbound.InboundServerPoliciesService;
  OUTBOUND_SERVICE?: typeof outbound.OutboundPoliciesService;
  TEST_CLUSTER: Json;
}

async function loadImpl(src: string): Promise<Impl> {
  const m = async (p: string) => (await import(pathToFileURL(join(src, p)).href)) as Json;
  return {
    ...(await m('policy.ts')),
    ...(await m('server/policy-server.ts')),
    ...(await m('testing.ts')),
  } as unknown as Impl;
}

/** A grpc-js server stream as the handlers use it; every write is encoded as grpc-js would encode it. */
class FakeCall extends EventEmitter {
  cancelled = false;
  messages = 0;
  constructor(
    readonly request: unknown,
    private readonly encode: (m: never) => Buffer,
    private readonly counter: { messages: number; bytes: number; ended: number },
  ) {
    super();
    this.on('error', () => undefined);
  }
  onWrite: (() => void) | undefined;
  write(m: unknown): boolean {
    this.messages++;
    this.onWrite?.();
    this.counter.messages++;
    this.counter.bytes += this.encode(m as never).length;
    return true;
  }
  end(): void {
    this.counter.ended++;
    this.emit('finish');
  }
}

/** BENCH_PROFILE=<dir>: a CPU profile of each phase (start, open, churn, server) into <dir>. */
async function profiler(tag: string): Promise<(phase: string) => Promise<() => Promise<void>>> {
  const dir = process.env.BENCH_PROFILE;
  if (!dir) return async () => async () => undefined;
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  return async (phase) => {
    await session.post('Profiler.start');
    return async () => {
      const { profile } = await session.post('Profiler.stop');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${tag}-${phase}.cpuprofile`), JSON.stringify(profile));
    };
  };
}

const cpuMs = (since?: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, ok: () => boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const PODS = '/api/v1/pods';
const PATHS: Record<string, string> = {
  Service: '/api/v1/services',
  Server: '/apis/policy.minimesh.io/v1beta3/servers',
  AuthorizationPolicy: '/apis/policy.minimesh.io/v1alpha1/authorizationpolicies',
  MeshTLSAuthentication: '/apis/policy.minimesh.io/v1alpha1/meshtlsauthentications',
  HTTPRoute: '/apis/policy.minimesh.io/v1beta3/httproutes',
};

const podName = (p: { d: { name: string }; i: number }) => `${p.d.name}-6d4cf56db6-${p.i.toString(36)}`;

function podObject(d: { namespace: string; name: string }, i: number, phase: 'Pending' | 'Scheduled' | 'Running') {
  const ip = phase === 'Running' ? `10.244.${(i >> 8) & 255}.${i & 255}` : undefined;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName({ d, i }),
      namespace: d.namespace,
      generateName: `${d.name}-6d4cf56db6-`,
      labels: { app: d.name, 'minimesh.io/scale-workload': 'true', 'pod-template-hash': '6d4cf56db6' },
      annotations: { 'kwok.x-k8s.io/node': 'fake' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${d.name}-6d4cf56db6`, controller: true }],
      managedFields: [{ manager: 'kube-controller-manager', operation: 'Update', fieldsV1: { 'f:metadata': {} } }],
    },
    spec: {
      serviceAccountName: d.name,
      ...(phase !== 'Pending' ? { nodeName: `kwok-node-${i % 50}` } : {}),
      containers: [
        {
          name: 'app',
          image: 'registry.k8s.io/pause:3.10',
          ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
        },
      ],
    },
    status: {
      phase: phase === 'Running' ? 'Running' : 'Pending',
      ...(ip ? { podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] } : {}),
    },
  };
}

async function child(src: string, size: number): Promise<Result> {
  const impl = await loadImpl(src);
  const profile = await profiler(`${src.includes('/.ab/') ? src.split('/.ab/')[1]!.split('/')[0] : 'tree'}-${size}`);
  const logger = createLogger({ name: 'bench', level: 'warn', format: 'json' });
  const api = createFakeKubeClient();
  // The fake API server's own work (cloning objects into its history and to each watch) is not the
  // controller's: timed around every call that makes it, and taken off the totals.
  let apiMs = 0;
  const timed = <T>(fn: () => T): T => {
    const t0 = process.cpuUsage();
    try {
      return fn();
    } finally {
      apiMs += cpuMs(t0);
    }
  };

  // --- the objects, as the scale bench's generator makes them
  const layout = workloadLayout({ pods: size });
  for (const ns of layout.namespaces)
    for (const o of namespaceObjects(ns, ['policy.minimesh.io']))
      if (o.kind !== 'Namespace') api.put(PATHS[o.kind as string]!, o);
  const services: Array<{ ip: string }> = [];
  const pods: Array<{ d: { namespace: string; name: string }; i: number }> = [];
  const servers: KubeObject[] = [];
  let podSeq = 0;
  layout.deployments.forEach((d, di) => {
    for (const o of deploymentObjects(d, ['policy.minimesh.io'])) {
      const path = PATHS[o.kind as string];
      if (!path) continue;
      if (o.kind === 'Service') {
        const ip = `10.96.${(di >> 8) & 255}.${di & 255}`;
        o.spec = { ...(o.spec as Json), clusterIP: ip, clusterIPs: [ip], type: 'ClusterIP' };
        services.push({ ip });
      }
      const stored = api.put(path, o);
      if (o.kind === 'Server') servers.push(stored);
    }
    for (let r = 0; r < d.replicas; r++) {
      const i = podSeq++;
      pods.push({ d, i });
      api.put(PODS, podObject(d, i, 'Running'));
    }
  });

  // --- start: as main.ts does (informers list into the index; the status Lease; the gRPC server)
  let stopProfile = await profile('start');
  let t = process.cpuUsage();
  apiMs = 0;
  const policy = await impl.startPolicy({
    api,
    logger,
    cluster: impl.TEST_CLUSTER,
    addr: '127.0.0.1:0',
    statusLease: {
      name: 'minimesh-policy-write',
      identity: 'bench',
      durationMs: 30_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    },
  });
  await policy.synced();
  const startMs = cpuMs(t);
  await stopProfile();
  let passes = 0;
  const writer = policy.status!.writer;
  const pass = writer.pass.bind(writer);
  writer.pass = async () => {
    passes++;
    return await pass();
  };
  // The leader writes every route's status once; the route watch brings them back.
  await until('the status Lease', () => policy.status!.elector.isLeader);
  const routesPath = PATHS.HTTPRoute!;
  await until('every route status', () =>
    layout.deployments.every((d) => api.object(routesPath, d.namespace, d.name)?.status?.parents?.length > 0),
  );
  await sleep(500);

  // --- open the streams
  const counter = { messages: 0, bytes: 0, ended: 0 };
  const handlers = { index: policy.index, metrics: policy.metrics, logger };
  const inboundHandlers = impl.createInboundHandlers(handlers);
  const outboundHandlers = impl.createOutboundHandlers(handlers);
  const encodeIn = (impl.INBOUND_SERVICE ?? inbound.InboundServerPoliciesService).watchPort.responseSerialize as (
    m: never,
  ) => Buffer;
  const encodeOut = (impl.OUTBOUND_SERVICE ?? outbound.OutboundPoliciesService).watch.responseSerialize as (
    m: never,
  ) => Buffer;
  const inboundCalls = new Map<string, FakeCall>();
  const watchPod = (p: { d: { namespace: string; name: string }; i: number }) => {
    const call = new FakeCall(
      inbound.PortSpec.fromPartial({ workload: JSON.stringify({ ns: p.d.namespace, pod: podName(p) }), port: 8080 }),
      encodeIn,
      counter,
    );
    inboundCalls.set(`${p.d.namespace}/${podName(p)}`, call);
    inboundHandlers.watchPort(call);
  };
  stopProfile = await profile('open');
  t = process.cpuUsage();
  for (const p of pods) watchPod(p);
  for (let c = 0; c < CLIENTS; c++) {
    const sourceWorkload = JSON.stringify({ ns: 'bench-clients', pod: `client-${c}` });
    for (const s of services)
      outboundHandlers.watch(
        new FakeCall({ sourceWorkload, target: { $case: 'addr', value: toTcpAddress(s.ip, 80) } }, encodeOut, counter),
      );
  }
  const openMs = cpuMs(t);
  await stopProfile();
  const opened = policy.index.watchCounts();
  if (
    opened.inbound !== size ||
    opened.outbound !== CLIENTS * services.length ||
    counter.messages !== size + CLIENTS * services.length
  )
    throw new Error(`streams: ${JSON.stringify(opened)}, ${counter.messages} first answers`);
  await sleep(500);

  // --- churn: pod replacements, one watch event every GAP_MS
  const before = counter.messages;
  const passesBefore = passes;
  apiMs = 0;
  stopProfile = await profile('churn');
  t = process.cpuUsage();
  for (let k = 0; k < CHURN_PODS; k++) {
    const victim = pods[(k * 7919) % pods.length]!;
    const old = podObject(victim.d, victim.i, 'Running');
    (old.metadata as Json).deletionTimestamp = '2026-11-29T00:00:00Z';
    timed(() => api.put(PODS, old));
    await sleep(GAP_MS);
    timed(() => api.remove(PODS, victim.d.namespace, podName(victim)));
    await sleep(GAP_MS);
    const fresh = { d: victim.d, i: podSeq++ };
    timed(() => api.put(PODS, podObject(fresh.d, fresh.i, 'Pending')));
    await sleep(GAP_MS);
    timed(() => api.put(PODS, podObject(fresh.d, fresh.i, 'Scheduled')));
    await sleep(GAP_MS);
    timed(() => api.put(PODS, podObject(fresh.d, fresh.i, 'Running')));
    // its proxy starts and asks for its port once the pod is known
    await sleep(GAP_MS / 2);
    watchPod(fresh);
    await sleep(GAP_MS / 2);
    pods[pods.indexOf(victim)] = fresh;
  }
  await sleep(300);
  const churnMs = cpuMs(t) - apiMs;
  await stopProfile();
  const messagesPerPod = (counter.messages - before) / CHURN_PODS;
  if (policy.index.watchCounts().inbound !== size)
    throw new Error(`after churn: ${JSON.stringify(policy.index.watchCounts())}`);

  // --- Server changes (the scale bench's propagation rounds): the proxyProtocol of one Deployment's
  // Server flipped, until every watch of its pods has the new answer; the median of ROUNDS
  const cpu: number[] = [];
  const walls: number[] = [];
  const m1 = counter.messages;
  stopProfile = await profile('server');
  for (let round = 0; round < ROUNDS; round++) {
    await sleep(200); // the status pass of the round before is done
    const d = layout.deployments[(round * 7 + 3) % layout.deployments.length]!;
    const server = servers.find((x) => x.metadata.namespace === d.namespace && x.metadata.name === d.name)!;
    const watches = pods.filter((p) => p.d === d).map((p) => inboundCalls.get(`${d.namespace}/${podName(p)}`)!);
    let waiting = watches.length;
    const done = new Promise<void>((resolve) => {
      for (const c of watches)
        c.onWrite = () => {
          c.onWrite = undefined;
          if (--waiting === 0) resolve();
        };
    });
    apiMs = 0;
    t = process.cpuUsage();
    const wall = performance.now();
    // a different Deployment each round, from its generator's HTTP/1
    timed(() => api.put(PATHS.Server!, { ...server, spec: { ...server.spec, proxyProtocol: 'HTTP/2' } }));
    await done;
    walls.push(performance.now() - wall);
    cpu.push(cpuMs(t) - apiMs);
  }
  await stopProfile();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const serverChangeMs = median(cpu);
  const serverChangeWallMs = median(walls);
  const serverChangeMessages = (counter.messages - m1) / ROUNDS;
  const heapMb = process.memoryUsage().heapUsed / 1e6;
  await policy.close();
  return {
    size,
    startMs,
    openMs,
    churnMsPerPod: churnMs / CHURN_PODS,
    messagesPerPod,
    statusPasses: passes - passesBefore,
    serverChangeMs,
    serverChangeWallMs,
    serverChangeMessages,
    heapMb,
  };
}

// ---------------------------------------------------------------------------------------------------
// The parent: runs each (tree, size) in a child process and prints the table.

function runChild(src: string, size: number): Promise<Result> {
  return new Promise((done, fail) => {
    const p = fork(fileURLToPath(import.meta.url), ['--child', src, String(size)], {
      execArgv: ['--import', import.meta.resolve('tsx')],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: Result | undefined;
    p.on('message', (m) => (result = m as Result));
    p.on('exit', (code) => (result ? done(result) : fail(new Error(`child (${src}, ${size}) exited ${code}`))));
  });
}

/** packages/policy/src of a commit, unpacked under bench/policy/.ab/ (inside the repository, so its imports resolve). */
function sourceOf(commit: string): string {
  const sha = execFileSync('git', ['rev-parse', '--short=12', commit], { cwd: repo, encoding: 'utf8' }).trim();
  const dir = join(here, '.ab', sha);
  if (!existsSync(join(dir, 'packages/policy/src'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const tar = execFileSync('git', ['archive', sha, 'packages/policy/src'], { cwd: repo, maxBuffer: 1 << 28 });
    execFileSync('tar', ['-x', '-C', dir], { input: tar });
  }
  return join(dir, 'packages/policy/src');
}

const fmt = (v: number, d = 2) => v.toFixed(d);

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    const r = await child(args[1]!, Number(args[2]));
    if (process.send) process.send(r);
    else console.log(JSON.stringify(r)); // run by hand (e.g. under --cpu-prof)
    return;
  }
  const abAt = args.indexOf('--ab');
  const trees: Array<{ label: string; src: string }> = [{ label: 'this tree', src: join(repo, 'packages/policy/src') }];
  if (abAt >= 0) trees.unshift({ label: args[abAt + 1]!, src: sourceOf(args[abAt + 1]!) });
  console.log(
    `policy churn bench: sizes ${SIZES.join(', ')}; ${CHURN_PODS} pod replacements, an event every ${GAP_MS} ms`,
  );
  const results = new Map<string, Result[]>();
  for (const size of SIZES)
    for (const tree of trees) {
      const r = await runChild(tree.src, size);
      (results.get(tree.label) ?? results.set(tree.label, []).get(tree.label)!).push(r);
      console.log(
        `  ${tree.label.padEnd(12)} ${String(size).padStart(5)} pods: start ${fmt(r.startMs, 0)} ms, open ${fmt(r.openMs, 0)} ms, ` +
          `churn ${fmt(r.churnMsPerPod)} ms/pod, ${fmt(r.messagesPerPod, 1)} msgs/pod, ${r.statusPasses} status passes, ` +
          `Server change ${fmt(r.serverChangeMs)} ms CPU, ${fmt(r.serverChangeWallMs)} ms, ${r.serverChangeMessages} msgs, heap ${fmt(r.heapMb, 0)} MB`,
      );
    }
  const rows: Array<[string, (r: Result) => number, number]> = [
    ['CPU per pod replacement (ms)', (r) => r.churnMsPerPod, 2],
    ['messages sent per pod replacement', (r) => r.messagesPerPod, 1],
    ['status-writer passes during churn', (r) => r.statusPasses, 0],
    ['CPU to open every stream (ms)', (r) => r.openMs, 0],
    ['CPU from start to synced (ms, with the in-memory API server serving the lists)', (r) => r.startMs, 0],
    ['CPU of a Server change until its watches have it (ms, median of 5)', (r) => r.serverChangeMs, 2],
    ['time of a Server change until its watches have it (ms, median of 5)', (r) => r.serverChangeWallMs, 2],
    ['heap used at the end (MB)', (r) => r.heapMb, 0],
  ];
  console.log(`\n| figure | tree | ${SIZES.join(' | ')} |\n|---|---|${SIZES.map(() => '---').join('|')}|`);
  for (const [name, get, d] of rows) {
    for (const tree of trees)
      console.log(
        `| ${name} | ${tree.label} | ${results
          .get(tree.label)!
          .map((r) => fmt(get(r), d))
          .join(' | ')} |`,
      );
    if (trees.length === 2) {
      const [a, b] = trees.map((x) => results.get(x.label)!);
      console.log(
        `| ${name} | ratio | ${a!.map((r, i) => (get(r) > 0 ? `${fmt(get(b![i]!) / get(r))}x` : '-')).join(' | ')} |`,
      );
    }
  }
}

await main();
