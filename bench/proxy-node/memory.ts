// Memory as a cluster pays it (issue 30, item 2): on the local cluster's real node (kubelet + containerd,
// cgroup v1), N pods of the echo app with a proxy sidecar each, idle and then under HTTP/1 keep-alive load
// from an unmeshed pod through their Service; for every proxy container:
//   - the kubelet's working set (stats/summary: memory.usage_in_bytes less total_inactive_file), idle and
//     under load, and the same computed here from the container's cgroup;
//   - the cgroup's memory.stat: total_rss (anonymous), total_cache / total_mapped_file / total_inactive_file
//     (file-backed);
//   - the process's RSS, PSS and USS (/proc/<pid>/smaps_rollup; the pid from the cgroup's cgroup.procs);
//   - where its resident pages are charged: each page's memory cgroup (/proc/<pid>/pagemap and
//     /proc/kpagecgroup), file-backed and anonymous apart: its own container, the app container of its pod,
//     another proxy container, another container, or a cgroup no longer in the tree.
// Run A: minimesh-proxy, injected by minimesh's injector (the namespace annotated for injection). Run B:
// linkerd2-proxy as the sidecar against minimesh's control plane, in pods this bench writes from run A's
// injected pod (proxy-init and the volumes as the injector made them, the proxy container replaced), in an
// image built here around the binary (a docker-archive tar imported into containerd; never pushed).
//
//   flock -w 7200 /tmp/minimesh-cluster.lock npx tsx bench/proxy-node/memory.ts [--pods 10] [--rps 200]
//     [--seconds 60] [--idle-seconds 30] [--kinds minimesh,linkerd] [--linkerd2-proxy <binary>] [--keep]
//
// As root (cgroups, /proc/<pid>/smaps_rollup, /proc/kpagecgroup). JSON goes to bench/proxy-node/runs/.
import { createPrivateKey } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, release } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { clusterInfo, componentStatus } from '@minimesh/local-cluster';
import { createLocalDriver } from '../../e2e/drivers/local.js';
import type { Driver } from '../../e2e/drivers/types.js';
import {
  echoServer,
  meshedNamespace,
  readyPods,
  serviceAccount,
  httpService,
  setUpSpecMesh,
  tearDownSpecMesh,
  type SpecMesh,
} from '../../e2e/src/apps.js';
import type { K8sObject } from '../../e2e/src/chart.js';
import {
  applyObjects,
  describePods,
  eventually,
  kubectlJson,
  specMeshSetup,
  waitForReadyPods,
  type MeshSetup,
} from '../../e2e/src/mesh.js';
import { repoRoot } from '../../e2e/src/tools.js';
import { createKeyAndCsr } from '../../packages/proxy/src/identity/csr.js';
import { buildLinkerdImage, removeLinkerdImage } from './image.js';
import { APP, PROXY_CONTAINER, linkerdPod, type InjectedPod, type PodTemplate } from './linkerd-pod.js';
import { MEMCG, cgroupFigures, cgroupPid, cgroupTree, exeMapping, memcgOf, pageCharges, procFigures } from './read.js';
import type { CgroupFigures, Owner, PageCharges, ProcFigures } from './read.js';

const HELP = `bench/proxy-node/memory.ts: proxy memory on the local cluster's real node, as the kubelet counts it.

  flock -w 7200 /tmp/minimesh-cluster.lock npx tsx bench/proxy-node/memory.ts [options]

  --pods N            meshed echo pods per run (default 10)
  --rps N             requests a second from the unmeshed load pod, over all pods (default 200)
  --seconds N         load duration (default 60)
  --idle-seconds N    wait after the pods are ready before the idle sample (default 30)
  --kinds LIST        minimesh,linkerd (default both; linkerd needs the binary)
  --linkerd2-proxy P  the linkerd2-proxy binary (default $MINIMESH_BENCH_LINKERD2_PROXY or
                      /opt/minimesh-peers/linkerd2-proxy); absent: run B is "not measured"
  --out FILE          JSON output (default bench/proxy-node/runs/<date>-<commit>.json)
  --keep              leave the namespaces, the release and the linkerd2-proxy image in place
  --help

As root, on the local cluster (docs/local-cluster.md), under the cluster lock. Installs minimesh's chart
in a namespace of its own (mm-nodemem) and removes it at the end, with its app namespaces.`;

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '10' },
    rps: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '60' },
    'idle-seconds': { type: 'string', default: '30' },
    kinds: { type: 'string', default: 'minimesh,linkerd' },
    'linkerd2-proxy': { type: 'string' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
const PODS = Number(args.pods);
const RPS = Number(args.rps);
const SECONDS = Number(args.seconds);
const IDLE_SECONDS = Number(args['idle-seconds']);
const KINDS = (args.kinds ?? '').split(',').filter(Boolean) as Kind[];
const LINKERD_BIN =
  args['linkerd2-proxy'] ?? process.env.MINIMESH_BENCH_LINKERD2_PROXY ?? '/opt/minimesh-peers/linkerd2-proxy';
if (process.getuid?.() !== 0) {
  process.stderr.write('memory.ts: run it as root (cgroups, /proc/<pid>/smaps_rollup, /proc/kpagecgroup)\n');
  process.exit(2);
}

type Kind = 'minimesh' | 'linkerd';
const CP_NS = 'mm-nodemem';
const APP_PORT = 8080;
const NS: Record<Kind, string> = { minimesh: 'mm-nodemem-a', linkerd: 'mm-nodemem-b' };

const MB = 1024 * 1024;

const t0 = Date.now();
const progress = (line: string) =>
  process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface KubeletContainer {
  time: string;
  workingSetBytes: number;
  usageBytes: number;
  rssBytes: number;
}
/** The kubelet's stats/summary, per "ns/pod/container". */
async function kubeletSummary(driver: Driver, node: string): Promise<Map<string, KubeletContainer>> {
  const r = await driver.kubectl(['get', '--raw', `/api/v1/nodes/${node}/proxy/stats/summary`]);
  if (r.code !== 0) throw new Error(`stats/summary: ${r.stderr.trim()}`);
  const s = JSON.parse(r.stdout) as {
    pods?: {
      podRef: { name: string; namespace: string };
      containers?: { name: string; memory?: KubeletContainer }[];
    }[];
  };
  const out = new Map<string, KubeletContainer>();
  for (const p of s.pods ?? [])
    for (const c of p.containers ?? [])
      if (c.memory)
        out.set(`${p.podRef.namespace}/${p.podRef.name}/${c.name}`, {
          time: c.memory.time,
          workingSetBytes: c.memory.workingSetBytes,
          usageBytes: c.memory.usageBytes,
          rssBytes: c.memory.rssBytes,
        });
  return out;
}

interface PodStatus {
  metadata: { name: string; uid: string };
  status: {
    initContainerStatuses?: { name: string; containerID?: string; imageID?: string; image?: string }[];
    containerStatuses?: { name: string; containerID?: string; imageID?: string; image?: string }[];
  };
}
const containerId = (p: PodStatus, name: string): string | undefined =>
  [...(p.status.initContainerStatuses ?? []), ...(p.status.containerStatuses ?? [])]
    .find((s) => s.name === name)
    ?.containerID?.replace(/^containerd:\/\//, '');

interface ContainerSample {
  pod: string;
  container: string;
  kubelet?: KubeletContainer;
  cgroup: CgroupFigures;
  proc: ProcFigures;
  exe: { path: string; devIno: string };
}
interface Sample {
  label: string;
  at: string;
  loadavg: number[];
  proxies: ContainerSample[];
  apps: ContainerSample[];
  charges?: (PageCharges & { pod: string })[];
}

async function sample(driver: Driver, kind: Kind, label: string, withCharges: boolean): Promise<Sample> {
  const ns = NS[kind];
  const pods = (await kubectlJson<{ items: PodStatus[] }>(driver, ['get', 'pods', '-n', ns, '-l', `app=${APP}`])).items;
  const kubelet = await kubeletSummary(driver, clusterInfo().nodeName).catch((err: Error) => {
    progress(`  kubelet summary not read: ${err.message}`);
    return new Map<string, KubeletContainer>();
  });
  const tree = cgroupTree();
  const proxyCgroups = new Set<string>();
  const rows: { pod: PodStatus; proxy: string; app: string }[] = [];
  for (const p of pods) {
    const pid = containerId(p, PROXY_CONTAINER[kind]);
    const aid = containerId(p, 'http');
    const proxy = pid ? tree.byName.get(pid) : undefined;
    const app = aid ? tree.byName.get(aid) : undefined;
    if (!proxy || !app) {
      progress(`  ${p.metadata.name}: no cgroup for the proxy or the app container yet, left out`);
      continue;
    }
    proxyCgroups.add(proxy);
    rows.push({ pod: p, proxy, app });
  }
  const one = (pod: string, container: string, dir: string): ContainerSample => {
    const k = kubelet.get(`${ns}/${pod}/${container}`);
    const pid = cgroupPid(dir);
    return {
      pod,
      container,
      ...(k ? { kubelet: k } : {}),
      cgroup: cgroupFigures(dir),
      proc: procFigures(pid),
      exe: exeMapping(pid),
    };
  };
  const s: Sample = {
    label,
    at: new Date().toISOString(),
    loadavg: loadavg().map((l) => Math.round(l * 100) / 100),
    proxies: rows.map((r) => one(r.pod.metadata.name, PROXY_CONTAINER[kind], r.proxy)),
    apps: rows.map((r) => one(r.pod.metadata.name, 'http', r.app)),
  };
  if (withCharges) {
    const containerd = componentStatus().find((c) => c.name === 'containerd')?.pid;
    const runtime = containerd === undefined ? undefined : memcgOf(containerd);
    s.charges = rows.map((r) => {
      const podDir = dirname(r.proxy);
      const classify = (c: string): Owner =>
        c === join(podDir, containerId(r.pod, 'http') ?? '-')
          ? 'app'
          : c.startsWith(`${podDir}/`) || c === podDir
            ? 'pod'
            : proxyCgroups.has(c)
              ? 'otherProxy'
              : c.includes('/kubepods/')
                ? 'otherContainer'
                : c === runtime
                  ? 'runtime'
                  : c === MEMCG
                    ? 'root'
                    : 'other';
      return { pod: r.pod.metadata.name, ...pageCharges(cgroupPid(r.proxy), r.proxy, tree, classify) };
    });
  }
  return s;
}

// ─────────────────────────────── the runs ───────────────────────────────

/** The unmeshed load pod (load.mjs in the http-client fixture image, from a ConfigMap). */
function loadObjects(driver: Driver, ns: string): K8sObject[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'nodemem-load', namespace: ns },
      data: { 'load.mjs': readFileSync(join(repoRoot, 'bench/proxy-node/load.mjs'), 'utf8') },
    },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'load', namespace: ns, annotations: { 'minimesh.io/inject': 'disabled' } },
      spec: {
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'load',
            image: driver.fixtureImage('http-client'),
            imagePullPolicy: driver.imagePullPolicy ?? 'IfNotPresent',
            command: ['node', '/load/load.mjs'],
            args: [
              `http://${APP}.${ns}.svc.cluster.local:${APP_PORT}/`,
              ...['--rps', String(RPS), '--seconds', String(SECONDS), '--pods', String(PODS), '--per-pod', '2'],
            ],
            volumeMounts: [{ name: 'script', mountPath: '/load' }],
          },
        ],
        volumes: [{ name: 'script', configMap: { name: 'nodemem-load' } }],
      },
    },
  ];
}

const jsonLines = (text: string): Record<string, unknown>[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });

interface RunResult {
  kind: Kind;
  measured: boolean;
  why?: string;
  image?: string;
  imageId?: string;
  proxyImageBytes?: number;
  podsReadyMs?: number;
  samples: Sample[];
  load?: { connected?: unknown; final?: unknown };
}

async function measure(driver: Driver, kind: Kind): Promise<Pick<RunResult, 'samples' | 'load'>> {
  const ns = NS[kind];
  progress(`${kind}: idle ${IDLE_SECONDS} s before the idle sample`);
  await sleep(IDLE_SECONDS * 1000);
  const samples = [await sample(driver, kind, 'idle', true)];
  progress(`${kind}: idle sample: ${headline(samples[0]!)}`);
  await applyObjects(driver, loadObjects(driver, ns));
  const connected = await eventually(`${ns}/load connected`, 120_000, async () => {
    const r = await driver.kubectl(['logs', '-n', ns, 'load']);
    return r.code === 0 ? jsonLines(r.stdout).find((l) => 'connected' in l) : undefined;
  });
  const started = Date.now();
  progress(
    `${kind}: load pod connected (${JSON.stringify(connected.connected)}, ${connected.dials} dials); ${RPS} rps for ${SECONDS} s`,
  );
  for (const at of [Math.round(SECONDS / 3), Math.round((2 * SECONDS) / 3), SECONDS - 5]) {
    await sleep(Math.max(0, started + at * 1000 - Date.now()));
    const last = at === SECONDS - 5;
    const s = await sample(driver, kind, `load+${at}s`, last);
    samples.push(s);
    progress(`${kind}: sample at ${at} s of load: ${headline(s)}`);
  }
  const final = await eventually(`${ns}/load finished`, 60_000, async () => {
    const r = await driver.kubectl(['logs', '-n', ns, 'load']);
    return r.code === 0 ? jsonLines(r.stdout).find((l) => l.final === true) : undefined;
  });
  progress(
    `${kind}: load done: sent ${final.sent}, ok ${final.ok}, failed ${final.failed}, p50 ${final.p50} ms, p99 ${final.p99} ms; per pod ${JSON.stringify(final.perPod)}`,
  );
  return { samples, load: { connected, final } };
}

const mb = (b: number) => (b / MB).toFixed(1);
function headline(s: Sample): string {
  const ws = s.proxies.map((p) => p.kubelet?.workingSetBytes ?? NaN);
  const cg = s.proxies.map((p) => p.cgroup.workingSet);
  const uss = s.proxies.map((p) => p.proc.uss);
  return `${s.proxies.length} proxies, working set (kubelet) median ${mb(median(ws))} MB, (cgroup) ${mb(median(cg))} MB, USS ${mb(median(uss))} MB, load ${s.loadavg[0]}`;
}
function median(xs: number[]): number {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
}

async function deleteNamespace(driver: Driver, ns: string): Promise<void> {
  await driver.kubectl(['delete', 'namespace', ns, '--ignore-not-found', '--wait=true', '--timeout=120s']);
}

async function runMinimesh(
  driver: Driver,
  m: MeshSetup,
  measureIt: boolean,
): Promise<{ result: RunResult; template: PodTemplate }> {
  const ns = NS.minimesh;
  const started = Date.now();
  await applyObjects(driver, [
    meshedNamespace({ ...m, appNs: ns }),
    ...echoServer({ appNs: ns, driver }, { name: APP, replicas: PODS, graceSeconds: 1 }),
  ]);
  progress(`minimesh: ${PODS} pods of ${ns}/${APP} applied (injected by minimesh's injector)`);
  await readyPods({ ...m, appNs: ns }, APP, { count: PODS, timeoutMs: 600_000 });
  const podsReadyMs = Date.now() - started;
  progress(`minimesh: ${PODS} pods ready in ${(podsReadyMs / 1000).toFixed(0)} s`);
  const pods = (await kubectlJson<{ items: InjectedPod[] }>(driver, ['get', 'pods', '-n', ns, '-l', `app=${APP}`]))
    .items;
  const st = [...(pods[0]!.status.initContainerStatuses ?? [])].find((s) => s.name === PROXY_CONTAINER.minimesh);
  const { samples, load } = measureIt ? await measure(driver, 'minimesh') : { samples: [], load: undefined };
  return {
    result: {
      kind: 'minimesh',
      measured: true,
      image: st?.image,
      imageId: st?.imageID,
      podsReadyMs,
      samples,
      ...(load ? { load } : {}),
    },
    template: pods[0]!,
  };
}

// ─────────────────────── run B: linkerd2-proxy as the sidecar ───────────────────────

async function runLinkerd(driver: Driver, template: PodTemplate | undefined): Promise<RunResult> {
  if (!existsSync(LINKERD_BIN))
    return {
      kind: 'linkerd',
      measured: false,
      why: `not measured: no linkerd2-proxy binary at ${LINKERD_BIN}`,
      samples: [],
    };
  if (!template)
    return {
      kind: 'linkerd',
      measured: false,
      why: "not measured: run B is written from run A's injected pod, and run A did not run",
      samples: [],
    };
  const ns = NS.linkerd;
  const img = buildLinkerdImage(LINKERD_BIN, { containerdSocket: clusterInfo().containerdSocket });
  progress(
    `linkerd: image ${img.ref} (${img.imageId.slice(0, 19)}, layer ${mb(img.bytes)} MB: ${img.files.join(' ')}) imported`,
  );
  const identity = `${APP}.${ns}.serviceaccount.identity.${CP_NS}.cluster.local`;
  const objects: K8sObject[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, annotations: { 'minimesh.io/inject': 'disabled' } } },
    serviceAccount(ns, APP),
    httpService(ns, APP),
  ];
  for (let i = 0; i < PODS; i++) {
    const name = `${APP}-${i}`;
    const { keyPem, csrDer } = await createKeyAndCsr(identity);
    const key = createPrivateKey(keyPem).export({ type: 'pkcs8', format: 'der' });
    objects.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${name}-l5d-id`, namespace: ns },
      data: { 'key.p8': key.toString('base64'), 'csr.der': csrDer.toString('base64') },
    } as K8sObject);
    objects.push(linkerdPod(template, ns, name, img.ref));
  }
  const started = Date.now();
  await applyObjects(driver, objects);
  progress(`linkerd: ${PODS} pods of ${ns} applied (proxy-init + linkerd2-proxy, written from run A's injected pod)`);
  try {
    await waitForReadyPods(driver, ns, APP, PODS, 600_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await describePods(driver, ns)}`, { cause: err });
  }
  const podsReadyMs = Date.now() - started;
  progress(`linkerd: ${PODS} pods ready in ${(podsReadyMs / 1000).toFixed(0)} s`);
  const { samples, load } = await measure(driver, 'linkerd');
  return {
    kind: 'linkerd',
    measured: true,
    image: img.ref,
    imageId: img.imageId,
    proxyImageBytes: img.bytes,
    podsReadyMs,
    samples,
    load,
  };
}

// ─────────────────────────────── the table ───────────────────────────────

function table(results: RunResult[]): string {
  const cell = (xs: number[]) => {
    const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
    return v.length === 0 ? '–' : `${mb(median(v))} (${mb(v[0]!)}–${mb(v.at(-1)!)})`;
  };
  const rows: [string, (r: RunResult) => string][] = [];
  const idle = (r: RunResult) => r.samples.find((s) => s.label === 'idle');
  const loaded = (r: RunResult) => r.samples.at(-1);
  const col = (pick: (r: RunResult) => Sample | undefined, f: (c: ContainerSample) => number) => (r: RunResult) =>
    cell(pick(r)?.proxies.map(f) ?? []);
  rows.push(['working set, kubelet, idle', col(idle, (c) => c.kubelet?.workingSetBytes ?? NaN)]);
  rows.push(['working set, kubelet, under load', col(loaded, (c) => c.kubelet?.workingSetBytes ?? NaN)]);
  rows.push(['working set, cgroup (usage − inactive_file), idle', col(idle, (c) => c.cgroup.workingSet)]);
  rows.push(['working set, cgroup, under load', col(loaded, (c) => c.cgroup.workingSet)]);
  rows.push(['anonymous: total_rss, under load', col(loaded, (c) => c.cgroup.total_rss)]);
  rows.push(['file-backed: total_cache, under load', col(loaded, (c) => c.cgroup.total_cache)]);
  rows.push(['  of it total_mapped_file', col(loaded, (c) => c.cgroup.total_mapped_file)]);
  rows.push(['  of it total_inactive_file', col(loaded, (c) => c.cgroup.total_inactive_file)]);
  rows.push(['kernel (memory.kmem.usage), under load', col(loaded, (c) => c.cgroup.kmem)]);
  rows.push(['process RSS, under load', col(loaded, (c) => c.proc.rss)]);
  rows.push(['process PSS, under load', col(loaded, (c) => c.proc.pss)]);
  rows.push(['process USS, idle', col(idle, (c) => c.proc.uss)]);
  rows.push(['process USS, under load', col(loaded, (c) => c.proc.uss)]);
  rows.push(['RSS − USS (shared pages), under load', col(loaded, (c) => c.proc.rss - c.proc.uss)]);
  const charged = (kind: 'file' | 'anon', owners: Owner[]) => (r: RunResult) =>
    cell(loaded(r)?.charges?.map((c) => owners.reduce((n, o) => n + (c[kind][o] ?? 0), 0)) ?? []);
  rows.push(['resident file-backed pages of the process (RssFile)', col(loaded, (c) => c.proc.rssFile)]);
  rows.push(["  charged to the proxy's own cgroup", charged('file', ['own'])]);
  rows.push(["  … to its pod's other containers (app, pause, proxy-init)", charged('file', ['app', 'pod'])]);
  rows.push(["  … to other pods' containers", charged('file', ['otherProxy', 'otherContainer'])]);
  rows.push(["  … to containerd's cgroup (image unpack)", charged('file', ['runtime'])]);
  rows.push(['  … to the root cgroup or another cgroup of the machine', charged('file', ['root', 'other'])]);
  rows.push(['  … to removed cgroups', charged('file', ['gone'])]);
  rows.push(['resident anonymous pages (RssAnon)', col(loaded, (c) => c.proc.rssAnon)]);
  rows.push(["  charged to the proxy's own cgroup", charged('anon', ['own'])]);
  rows.push([
    '  … elsewhere',
    charged('anon', ['app', 'pod', 'otherProxy', 'otherContainer', 'runtime', 'root', 'other', 'gone']),
  ]);
  const measured = results.filter((r) => r.measured);
  if (measured.length === 0) return results.map((r) => `${r.kind}: ${r.why}`).join('\n') || 'nothing measured';
  const head = `| MB, median (min–max) over the pods | ${measured.map((r) => (r.kind === 'minimesh' ? 'minimesh-proxy' : 'linkerd2-proxy')).join(' | ')} |`;
  const sep = `|---|${measured.map(() => '---|').join('')}`;
  const body = rows.map(([name, f]) => `| ${name} | ${measured.map(f).join(' | ')} |`);
  const notes = results.filter((r) => !r.measured).map((r) => `\n${r.kind}: ${r.why}`);
  return [head, sep, ...body].join('\n') + notes.join('');
}

// ─────────────────────────────── main ───────────────────────────────

function gitCommit(): string {
  try {
    const c = execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['-C', repoRoot, 'status', '--porcelain', '--', 'packages', 'charts'], {
      encoding: 'utf8',
    }).trim();
    return dirty ? `${c}+dirty` : c;
  } catch {
    return 'unknown';
  }
}

const driver = createLocalDriver();
const m: MeshSetup = specMeshSetup(driver, { cpNs: CP_NS, appNs: NS.minimesh });
m.cpNs = CP_NS; // this bench's own release, whatever MINIMESH_E2E_NAMESPACE says
const startedAt = new Date();
const commit = gitCommit();
const results: RunResult[] = [];
let spec: SpecMesh | undefined;
let linkerdRef: string | undefined;
const out =
  args.out ??
  join(repoRoot, 'bench/proxy-node/runs', `${startedAt.toISOString().slice(0, 16).replace(/:/g, '')}Z-${commit}.json`);
const loadStart = loadavg().map((l) => Math.round(l * 100) / 100);
let failure: string | undefined;
try {
  progress(`cluster: ${await driver.setup()}`);
  // An earlier run's leftovers (its namespaces are deleted without waiting at its end).
  await driver.helm(['uninstall', m.release, '-n', CP_NS, '--ignore-not-found', '--wait', '--timeout', '60s']);
  for (const ns of [...Object.values(NS), CP_NS]) await deleteNamespace(driver, ns);
  progress(`minimesh's chart into ${CP_NS} (the e2e suite's install, webhook scoped to this bench's namespaces)`);
  spec = await setUpSpecMesh(m, { tmpPrefix: 'mm-nodemem-' });
  progress('control plane ready (identity, destination, injector)');
  let template: PodTemplate | undefined;
  if (KINDS.includes('minimesh') || KINDS.includes('linkerd')) {
    // Run B is written from run A's injected pod: run A's pods are made even when only B is asked for.
    const a = await runMinimesh(driver, m, KINDS.includes('minimesh'));
    template = a.template;
    if (KINDS.includes('minimesh')) results.push(a.result);
    progress(`minimesh: removing ${NS.minimesh}`);
    await deleteNamespace(driver, NS.minimesh);
  }
  if (KINDS.includes('linkerd')) {
    const b = await runLinkerd(driver, template);
    if (b.image) linkerdRef = b.image;
    results.push(b);
    if (!b.measured) progress(`linkerd: ${b.why}`);
  }
} catch (err) {
  failure = (err as Error).stack ?? String(err);
  progress(`FAILED: ${(err as Error).message}`);
} finally {
  if (!args.keep) {
    progress('cleaning up: the app namespaces, the release, the linkerd2-proxy image');
    for (const ns of Object.values(NS)) await deleteNamespace(driver, ns).catch(() => undefined);
    await tearDownSpecMesh({ ...m, appNs: NS.minimesh }, spec).catch(() => undefined);
    await deleteNamespace(driver, CP_NS).catch(() => undefined);
    if (linkerdRef) removeLinkerdImage(linkerdRef, clusterInfo().containerdSocket);
  }
}

const file = {
  bench: 'proxy-node/memory',
  date: startedAt.toISOString(),
  commit,
  node: process.version,
  kernel: release(),
  cgroup: 'v1 (memory controller at /sys/fs/cgroup/memory)',
  loadavg: { start: loadStart, end: loadavg().map((l) => Math.round(l * 100) / 100) },
  config: {
    pods: PODS,
    rps: RPS,
    seconds: SECONDS,
    idleSeconds: IDLE_SECONDS,
    kinds: KINDS,
    linkerd2Proxy: LINKERD_BIN,
  },
  ...(failure ? { failure } : {}),
  results,
};
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(file, null, 1)}\n`);
process.stdout.write(`\n${table(results)}\n\nJSON: ${out}\n`);
process.exit(failure ? 1 : 0);
