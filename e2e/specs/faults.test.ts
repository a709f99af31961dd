// Faults under load (issue 17 item 2, issue 15 items 2 and 4, issue 32, issue 31 item 1): a meshed client
// (`load`, e2e/scripts/load.mjs) sends 200 requests a second through its proxy, mTLS, to a meshed server
// (2 pods), and counts every request, while:
//   f. the chart is upgraded from the previous release (222b784's chart, the CRDs inside) to this one:
//      the CRDs handed to charts/minimesh-crds as docs/chart.md says, no user object deleted;
//   a. the destination pod is deleted;
//   b. the identity pod is deleted (scaled to 0) just before the client's proxy renews its certificate,
//      and kept down until that renewal has failed (leaves live 60 s here: proxies renew every 42 s);
//   c1. the issuer is rotated (new issuer from the same root);
//   c2. the root is rotated (docs/certificates.md, step by step: bundle, restart, new issuer, drop the old
//      root, restart);
//   d. kube-apiserver is restarted (every watch stream cut);
//   e. a server pod is killed (SIGKILL to its app and proxy) mid-stream.
// Goal: no failed request for the control-plane faults, the rotations and the upgrade; for the killed
// pod, only requests already sent to it may fail.
//
// Each case stands alone: it first brings the install to what it needs (f: the previous chart; the others:
// this one), outside its measured window, so `-t c2` runs it alone and any order works.
// MINIMESH_FAULTS_ORDER=shuffle[:<seed>] shuffles the cases (the random seed is printed and reported);
// MINIMESH_FAULTS_ROUNDS=<n> runs them n times on the one install. `npm run e2e -- faults` does both
// (docs/e2e.md). The whole report (table, timelines, pod changes, failure groups, examples, the load
// around failures, the logs of every pod) goes to e2e/.artifacts as the spec goes, whatever the reporter.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import { Artifacts } from '../src/artifacts.js';
import { certFiles, type CertFiles } from '../src/certs.js';
import type { K8sObject } from '../src/chart.js';
import { LoadCollector, loadObjects, type LoadFailure } from '../src/load.js';
import {
  applyObjects,
  CRDS_RELEASE,
  createMeshCerts,
  crdsNotDeleting,
  crdsServed,
  eventually,
  installChart,
  isReady,
  kubectlJson,
  metricSum,
  proxyMetrics,
  uninstallChart,
  specMeshSetup,
  type MeshSetup,
  type Pod,
} from '../src/mesh.js';
import { appObjects, CONTROL_PLANE, CONTROL_PLANE_KEY as CP, readyPods } from '../src/apps.js';
import { CpuSampler } from '../src/cpu-sampler.js';
import { LogFollower } from '../src/log-follower.js';
import { PodWatch } from '../src/pod-watch.js';
import { chartDir, cliMain, repoRoot, run, runOk } from '../src/tools.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
/**
 * The load's rate: 200 requests a second (the figures of docs/reliability.md), or MINIMESH_FAULTS_RPS
 * (`npm run e2e -- faults --rps N`) on a machine too busy to serve that: the report and the table say
 * which rate ran.
 */
const RPS = ((): number => {
  const v = process.env.MINIMESH_FAULTS_RPS;
  if (v === undefined || v === '') return 200;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 10 || n > 1000)
    throw new Error(`MINIMESH_FAULTS_RPS=${v}: expected a whole number of requests a second, 10 to 1000`);
  return n;
})();
/** Leaf lifetime for this install: short, so proxies renew (at 70 %: every 42 s) during the spec. */
const LEAF_LIFETIME = '60s';
/** The previous release of the chart, for the upgrade: one chart with the CRDs inside (docs/chart.md). */
const PREVIOUS_CHART_COMMIT = '222b784';
const m: MeshSetup = specMeshSetup(driver, {
  cpNs: `minimesh-faults-${suffix}`,
  appNs: `mm-faults-app-${suffix}`,
  sets: [`identity.issuer.issuanceLifetime=${LEAF_LIFETIME}`],
});
/** How long a pod of the spec may take to be ready (a rollout on a busy 2-core node). */
const READY_MS = 240_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const art = new Artifacts('faults');

/** The minimesh CRDs, which the previous chart renders and charts/minimesh-crds now owns. */
const CRDS = [
  'servers.policy.minimesh.io',
  'authorizationpolicies.policy.minimesh.io',
  'meshtlsauthentications.policy.minimesh.io',
  'networkauthentications.policy.minimesh.io',
  'httproutes.policy.minimesh.io',
  'externalworkloads.workload.minimesh.io',
];

let tmp = '';
let previousChart = '';
/** The certificates the release uses now (c1 and c2 replace them). */
let certs: CertFiles;
/** Which chart the release runs now. */
let release: 'previous' | 'current' = 'previous';
let load: LoadCollector;
let pods: PodWatch;
let logs: LogFollower;
let cpu: CpuSampler | undefined;
let runStart = 0;

interface Row {
  id: string;
  round: number;
  fault: string;
  sent: number;
  failed: number;
  recoveryMs: number;
  note: string;
  from: number;
  to: number;
  failures: LoadFailure[];
  /** When requests failed: what, in which step, the load and the CPU around them (the assertion's message). */
  explain: string;
}
const rows: Row[] = [];
/** Set-up steps between the measured windows (bringing the install to what a case needs). */
const setupSteps: Array<{ at: number; what: string }> = [];

function say(line: string): void {
  console.log(`[faults] ${line}`);
  art.append('report.md', `${line}\n`);
}
const rel = (t: number, base: number): string => `+${((t - base) / 1000).toFixed(1)}s`;

async function kubectlOk(args: readonly string[], input?: string): Promise<string> {
  const r = await driver.kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

async function helmOk(args: readonly string[]): Promise<string> {
  const r = await driver.helm(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** `kubectl rollout status` of every Deployment in the namespace. */
async function rolledOut(ns: string): Promise<void> {
  const names = (await kubectlOk(['get', 'deploy', '-n', ns, '-o', 'name'])).split('\n').filter(Boolean);
  for (const d of names) await kubectlOk(['rollout', 'status', '-n', ns, d, '--timeout=240s']);
}

/**
 * `rollout status` returns while the old pods are still terminating; an old injector keeps answering the
 * API server's webhook calls on its open connection (docs/certificates.md says to wait for them).
 */
function settled(ns: string): Promise<unknown> {
  return eventually(
    `no terminating pod in ${ns}`,
    120_000,
    async () => {
      const list = await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', ns]);
      return list.items.every((p) => !(p.metadata as { deletionTimestamp?: string }).deletionTimestamp);
    },
    1000,
  );
}

/** `minimesh <args>`, as a user runs it. */
async function minimesh(args: readonly string[]): Promise<string> {
  return runOk(process.execPath, [cliMain, ...args]);
}

/** The traffic flows: the last 2 s of ticks show at least 75 % of the rate answered. */
async function flowing(): Promise<void> {
  const t0 = Date.now();
  await eventually('the load answered at 75 % of its rate for 2 s', 120_000, async () => {
    const t = load.lastTick();
    if (t === 0) return false;
    const w = load.window(t - 2000, t);
    return w.ok >= 2 * RPS * 0.75;
  }).catch((err: Error) => {
    // Say whether the machine starved the load pod (waited for a CPU far longer than it ran).
    throw new Error(
      `${err.message}; meanwhile the ${loadCpu(t0, Date.now())} (cpu ${cpu?.meanBusy(t0, Date.now()) ?? '?'}% busy)`,
      {
        cause: err,
      },
    );
  });
}

/**
 * The load is in its steady state, as a fault's window must start: the last 3 s answered at 90 % of the
 * rate or more, no answer slower than 1 s, fewer than 50 requests in flight (about 10 when all is well).
 * A window that began on a backlog left by a set-up step (or by another process hogging the machine)
 * would charge the fault with its requests. Returns what it saw if it had to give up (after 3 minutes).
 */
async function steady(): Promise<string | undefined> {
  let seen = '';
  try {
    await eventually(
      'the load in its steady state',
      180_000,
      async () => {
        const t = load.lastTick();
        if (t === 0) return false;
        const w = load.window(t - 3000, t);
        const inflight = load.inflightAt(t);
        seen = `answered ${w.ok} in 3 s, in flight ${inflight}, slowest ${w.maxMs} ms`;
        return w.ok >= 3 * RPS * 0.9 && w.maxMs < 1000 && inflight < 50;
      },
      1000,
    );
    return undefined;
  } catch {
    return seen;
  }
}

/** The load pods' CPU and their wait for one (both as shares of one core) between two instants. */
function loadCpu(from: number, to: number): string {
  const l = cpu?.podShare(from, to, 'load-') ?? { pct: 0, waitPct: 0 };
  return `load pod ran ${l.pct}% and waited ${l.waitPct}% of a core`;
}

const timeline: Array<{ at: number; what: string }> = [];
/** Notes a step of the fault being applied. */
function mark(step: string): void {
  timeline.push({ at: Date.now(), what: step });
}
/** The step of the fault under way at `t`: the last one noted at or before it. */
function stepAt(t: number): string {
  let step = 'fault applied';
  for (const s of timeline) if (s.at <= t) step = s.what;
  return step;
}

/** Failures grouped by what they were and the step they were sent in, with when (s since the fault). */
function summarize(failures: readonly LoadFailure[], from: number, steps = true): string[] {
  const groups = new Map<string, LoadFailure[]>();
  for (const f of failures) {
    const what = f.error ?? `HTTP ${f.status} ${f.proxyError ?? ''}`.trim();
    const key = steps ? `${what} — during "${stepAt(f.sent)}"` : what;
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  const s = (t: number) => ((t - from) / 1000).toFixed(2);
  return [...groups].map(
    ([k, fs]) =>
      `${fs.length} × ${k}: sent +${s(Math.min(...fs.map((f) => f.sent)))}s .. +${s(Math.max(...fs.map((f) => f.sent)))}s, failed by +${s(Math.max(...fs.map((f) => f.at)))}s, from ${[...new Set(fs.map((f) => f.pod))].join(', ')}`,
  );
}

/** Pods of a namespace (Running, not marked for deletion) that carry a proxy (the control plane's too). */
async function proxiedPods(ns: string): Promise<Pod[]> {
  const list = await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', ns]);
  return list.items.filter(
    (p) =>
      p.status.phase === 'Running' &&
      !(p.metadata as { deletionTimestamp?: string }).deletionTimestamp &&
      [...(p.spec.initContainers ?? []), ...p.spec.containers].some((c) => c.name === 'minimesh-proxy'),
  );
}

/**
 * What the logs do not say: containers of both namespaces that restarted (how they ended, and their
 * previous run's log, into faults-logs/<case>/), the events and the pods. Every container's log is
 * followed all along (faults-logs/pods/), so a pod a rollout deleted is there too.
 */
async function diagnostics(caseDir: string): Promise<string> {
  const out: string[] = [];
  for (const ns of [m.appNs, m.cpNs]) {
    const list = await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', ns]).catch(() => ({
      items: [] as Pod[],
    }));
    for (const p of list.items) {
      const statuses = [...(p.status.initContainerStatuses ?? []), ...(p.status.containerStatuses ?? [])] as Array<{
        name: string;
        restartCount?: number;
        lastState?: { terminated?: Record<string, unknown> };
      }>;
      for (const c of statuses.filter((x) => (x.restartCount ?? 0) > 0)) {
        const prev = await driver.kubectl(['logs', '-n', ns, p.metadata.name, '-c', c.name, '--previous']);
        art.write(`logs/${caseDir}/${ns}_${p.metadata.name}_${c.name}.previous.log`, prev.stdout || prev.stderr);
        out.push(
          `${ns}/${p.metadata.name}/${c.name} restarted ${c.restartCount}×, last: ${JSON.stringify(c.lastState?.terminated ?? {})}`,
        );
      }
    }
    const events = await driver.kubectl(['get', 'events', '-n', ns, '--sort-by=.lastTimestamp', '-o', 'wide']);
    art.write(`logs/${caseDir}/${ns}_events.txt`, events.stdout || events.stderr);
  }
  out.push(`(every container's log: ${art.path('logs/pods/')}; events: ${art.path(`logs/${caseDir}/`)})`);
  return out.join('\n');
}

/**
 * Runs one fault with the load flowing: `inject` returns once the faulted part is back (its own
 * recovery); the window ends 5 s later. Records the row and writes the report before any assertion.
 */
async function measure(id: string, round: number, fault: string, inject: () => Promise<string>): Promise<Row> {
  const unsteady = await steady();
  const from = Date.now();
  timeline.length = 0;
  say(`\n## ${id}. ${fault}${round > 1 ? ` (round ${round})` : ''}: ${new Date(from).toISOString()}`);
  if (unsteady) say(`  (started although the load was not steady after 3 minutes: ${unsteady})`);
  let note = '';
  try {
    note = await inject();
  } finally {
    mark('back');
  }
  const back = Date.now();
  await sleep(5000);
  await flowing();
  const to = Date.now();
  await eventually('a load tick after the window', 10_000, async () => load.lastTick() > to);
  const w = load.window(from, to);
  const lastFailure = Math.max(0, ...w.failures.map((f) => f.at));
  const row: Row = {
    id,
    round,
    fault,
    sent: w.sent,
    failed: w.failures.length,
    recoveryMs: Math.max(back, lastFailure) - from,
    note: `${note}; slowest answer ${w.maxMs} ms${cpu ? `; cpu ${cpu.meanBusy(from, to)}% busy, ${loadCpu(from, to)}` : ''}${unsteady ? '; started not steady' : ''}`,
    from,
    to,
    failures: w.failures,
    explain: '',
  };
  rows.push(row);
  say(
    `${id}: sent ${row.sent}, failed ${row.failed}, recovered in ${(row.recoveryMs / 1000).toFixed(1)} s (${row.note})`,
  );
  say(`  timeline: ${timeline.map((s) => `${rel(s.at, from)} ${s.what}`).join('; ')}`);
  say(`  pods:\n    ${pods.between(from, to, from).join('\n    ')}`);
  if (cpu) say(`  cpu: ${cpu.meanBusy(from, to)}% busy on average`);
  for (const f of w.failures) art.append('failures.jsonl', `${JSON.stringify({ case: id, round, ...f })}\n`);
  if (w.failures.length > 0) {
    // Said in the report and kept for the assertion, whose message is what a CI log shows of a failure.
    const explain: string[] = [`${row.failed} of ${row.sent} failed (${row.note})`];
    const tell = (line: string) => {
      say(line);
      explain.push(line);
    };
    for (const line of summarize(w.failures, from)) tell(`  failed: ${line}`);
    for (const f of w.failures.slice(0, 10))
      say(`  e.g. ${JSON.stringify({ ...f, sent: rel(f.sent, from), at: rel(f.at, from) })}`);
    tell(`  timeline: ${timeline.map((s) => `${rel(s.at, from)} ${s.what}`).join('; ')}`);
    const first = Math.min(...w.failures.map((f) => f.sent));
    const last = Math.max(...w.failures.map((f) => f.at));
    tell(`  load around the failures:\n    ${load.ticksBetween(first - 3000, last + 3000, from).join('\n    ')}`);
    if (cpu) tell(`  cpu around the failures:\n    ${cpu.between(first - 5000, last + 1000, from).join('\n    ')}`);
    say(`  diagnostics:\n${await diagnostics(`${id}-r${round}`)}`);
    row.explain = explain.join('\n');
  }
  return row;
}

async function podOf(ns: string, selector: string): Promise<Pod> {
  const list = (await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', ns, '-l', selector])).items.filter(
    (p) => p.status.phase === 'Running' && !(p.metadata as { deletionTimestamp?: string }).deletionTimestamp,
  );
  if (list.length === 0) throw new Error(`no running pod ${ns} -l ${selector}`);
  return list[0] as Pod;
}

/** The meshed workloads of this spec (load and server pods), Running and not being deleted. */
async function meshedPods(): Promise<Pod[]> {
  const list = await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', m.appNs]);
  return list.items.filter(
    (p) => p.status.phase === 'Running' && !(p.metadata as { deletionTimestamp?: string }).deletionTimestamp,
  );
}

/** The identity controller's issuer reloads (result="updated"). */
async function issuerReloads(): Promise<number> {
  const pod = await podOf(m.cpNs, `${CP}=identity`);
  return metricSum(await proxyMetrics(driver, m.cpNs, pod.metadata.name, 9990), 'identity_issuer_reloads_total', {
    result: 'updated',
  });
}

/** Waits until every proxy (apps and control plane) refreshed its certificate after `since` (epoch ms). */
async function everyProxyRenewedAfter(since: number): Promise<void> {
  // Each kubectl costs this 2-core machine a tenth of a second of CPU: ask each proxy until it renewed,
  // every 2 s, not every proxy twice a second.
  const renewed = new Set<string>();
  await eventually(
    'every proxy renewed its certificate',
    120_000,
    async () => {
      for (const ns of [m.appNs, m.cpNs])
        for (const p of await proxiedPods(ns)) {
          if (renewed.has(p.metadata.uid)) continue;
          const text = await proxyMetrics(driver, ns, p.metadata.name);
          if (metricSum(text, 'control_identity_cert_refresh_timestamp_seconds') * 1000 <= since) return false;
          renewed.add(p.metadata.uid);
        }
      return true;
    },
    2000,
  );
}

/** Every meshed proxy's trust anchors (the injected env), one PEM string per pod. */
async function proxyAnchors(): Promise<string[]> {
  return (await meshedPods()).map(
    (p) =>
      [...(p.spec.initContainers ?? []), ...p.spec.containers]
        .find((c) => c.name === 'minimesh-proxy')
        ?.env?.find((e) => e.name === 'MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS')?.value ?? '',
  );
}

/**
 * The server's app waits 3 s after a pod's deletion before it gets SIGTERM (preStop sleep), as
 * Kubernetes apps behind a Service must: until every client has heard the endpoint is gone (endpoint
 * controller, destination, the client's proxy; kube-proxy without a mesh), requests still arrive. The
 * rollouts of step c2 replace the server pods with traffic flowing.
 */
function withPreStopSleep(d: K8sObject): K8sObject {
  const spec = d.spec as { template: { spec: { containers: Array<Record<string, unknown>> } } };
  for (const c of spec.template.spec.containers) c.lifecycle = { preStop: { sleep: { seconds: 3 } } };
  return d;
}

/** Policy and workload objects a user wrote (one of each CRD), off the load's path: f must keep them all. */
function userObjects(): K8sObject[] {
  const ns = m.appNs;
  const G = 'policy.minimesh.io';
  return [
    {
      apiVersion: `${G}/v1beta3`,
      kind: 'Server',
      metadata: { name: 'grpc', namespace: ns },
      spec: { podSelector: { matchLabels: { app: 'server' } }, port: 'grpc', proxyProtocol: 'gRPC' },
    },
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'MeshTLSAuthentication',
      metadata: { name: 'clients', namespace: ns },
      spec: { identityRefs: [{ kind: 'ServiceAccount', name: 'client' }] },
    },
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'NetworkAuthentication',
      metadata: { name: 'cluster', namespace: ns },
      spec: { networks: [{ cidr: '10.0.0.0/8' }] },
    },
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'AuthorizationPolicy',
      metadata: { name: 'grpc-clients', namespace: ns },
      spec: {
        targetRef: { group: G, kind: 'Server', name: 'grpc' },
        requiredAuthenticationRefs: [{ group: G, kind: 'MeshTLSAuthentication', name: 'clients' }],
      },
    },
    {
      apiVersion: `${G}/v1beta3`,
      kind: 'HTTPRoute',
      metadata: { name: 'grpc-timeouts', namespace: ns },
      spec: {
        parentRefs: [{ group: 'core', kind: 'Service', name: 'server', port: 9090 }],
        rules: [{ timeouts: { request: '10s' } }],
      },
    },
    {
      apiVersion: 'workload.minimesh.io/v1beta1',
      kind: 'ExternalWorkload',
      metadata: { name: 'vm-1', namespace: ns, labels: { app: 'vm' } },
      spec: {
        meshTLS: { identity: `vm.${ns}.serviceaccount.identity.${m.cpNs}.cluster.local`, serverName: 'vm' },
        workloadIPs: [{ ip: '10.99.0.1' }],
        ports: [{ name: 'http', port: 8080 }],
      },
    },
  ];
}

/** "<kind>/<name> <uid>" of every user object and every minimesh CRD (a deleted and re-made one changes). */
async function userObjectUids(): Promise<string[]> {
  // Fully qualified: another API group may serve httproutes too (the Gateway API).
  const objs = await kubectlOk([
    'get',
    CRDS.join(','),
    '-n',
    m.appNs,
    '-o',
    'jsonpath={range .items[*]}{.kind}/{.metadata.name} {.metadata.uid}{"\\n"}{end}',
  ]);
  const crds = await kubectlOk([
    'get',
    'crd',
    ...CRDS,
    '-o',
    'jsonpath={range .items[*]}{.kind}/{.metadata.name} {.metadata.uid}{"\\n"}{end}',
  ]);
  return `${objs}${crds}`.split('\n').filter(Boolean).sort();
}

/**
 * CRDs charts/minimesh-crds has and the previous chart did not (HTTPLocalRateLimitPolicy), already on the
 * cluster: an earlier run, or an earlier case of this one (f, then downgradeToPrevious), installed them
 * with keep, so they outlived their release and still name its namespace as their owner, and Helm would
 * refuse to adopt them ("invalid ownership metadata"). A cluster that only ever had the previous release
 * has none; the migration hands them over with the others.
 */
async function laterCrdsLeftBehind(): Promise<string[]> {
  const crds = await kubectlJson<{ items: { metadata: { name: string } }[] }>(driver, ['get', 'crd']);
  return crds.items
    .map((c) => c.metadata.name)
    .filter((n) => /\.(policy|workload)\.minimesh\.io$/.test(n) && !CRDS.includes(n));
}

/**
 * The migration from the chart with the CRDs inside to charts/minimesh-crds + this chart, as docs/chart.md
 * writes it: hand the CRDs to the minimesh-crds release (keep, new owner), install that chart (it adopts
 * them), upgrade the control plane (Helm skips deleting what is marked keep).
 */
async function migrateToCurrent(): Promise<void> {
  await kubectlOk([
    'annotate',
    'crd',
    ...CRDS,
    ...(await laterCrdsLeftBehind()),
    '--overwrite',
    'helm.sh/resource-policy=keep',
    `meta.helm.sh/release-name=${CRDS_RELEASE}`,
    `meta.helm.sh/release-namespace=${m.cpNs}`,
  ]);
  mark('CRDs annotated (keep, owner minimesh-crds)');
  await helmOk(['upgrade', '--install', CRDS_RELEASE, join(repoRoot, 'charts', 'minimesh-crds'), '-n', m.cpNs]);
  mark('minimesh-crds installed (adopted the CRDs)');
  await helmOk(['upgrade', m.release, chartDir, '-n', m.cpNs, '--reset-then-reuse-values']);
  mark('helm upgrade of the control plane done');
  await rolledOut(m.cpNs);
  mark('control plane rolled out');
  release = 'current';
}

/**
 * Back to the previous release (for f after another case): the CRDs' release goes (its CRDs stay: keep),
 * the previous chart takes them over, and they lose the keep annotation, exactly as an install of that
 * chart left them.
 */
async function downgradeToPrevious(): Promise<void> {
  await helmOk(['uninstall', CRDS_RELEASE, '-n', m.cpNs]);
  await applyObjects(driver, previousChartShim());
  await installChart(m, certs, { chart: previousChart, crds: false });
  await crdsServed(driver, CRDS);
  await kubectlOk(['annotate', 'crd', ...CRDS, 'helm.sh/resource-policy-']);
  await rolledOut(m.cpNs);
  await settled(m.cpNs);
  release = 'previous';
}

/**
 * The previous chart runs this tree's images (the e2e builds no images of that commit): their
 * policy controller also reads the Gateway API's routes and writes their status (issue 26), which that
 * chart's ClusterRole does not grant, so it would answer 403 and the policy container never be ready. A
 * real release of that commit runs its own images, which do not read them. This grants what the new
 * images need beyond the previous chart (this chart's policy-rbac.yaml rules for the Gateway API, the
 * route and EgressNetwork status, HTTPLocalRateLimitPolicy and EgressNetwork; injector-rbac.yaml's namespace informer), as its own
 * objects, so the upgrade in f is still the chart's own.
 */
function previousChartShim(): K8sObject[] {
  const name = `minimesh-e2e-previous-${m.cpNs}`;
  const subjects = [
    { kind: 'ServiceAccount', name: 'minimesh-destination', namespace: m.cpNs },
    { kind: 'ServiceAccount', name: 'minimesh-injector', namespace: m.cpNs },
  ];
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        {
          apiGroups: ['gateway.networking.k8s.io'],
          resources: ['httproutes', 'grpcroutes', 'tlsroutes', 'tcproutes'],
          verbs: ['list', 'watch'],
        },
        {
          apiGroups: ['gateway.networking.k8s.io'],
          resources: ['httproutes/status', 'grpcroutes/status', 'tlsroutes/status', 'tcproutes/status'],
          verbs: ['patch'],
        },
        {
          apiGroups: ['policy.minimesh.io'],
          resources: ['httproutes/status', 'egressnetworks/status'],
          verbs: ['patch'],
        },
        // The policy controller's HTTPLocalRateLimitPolicy and EgressNetwork informers, the injector's namespace informer.
        {
          apiGroups: ['policy.minimesh.io'],
          resources: ['httplocalratelimitpolicies', 'egressnetworks'],
          verbs: ['list', 'watch'],
        },
        { apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects,
    },
  ] as K8sObject[];
}

/** Brings the install to the chart a case needs, outside its measured window, and says so in the report. */
async function needChart(want: 'previous' | 'current'): Promise<void> {
  if (release === want) return;
  const t0 = Date.now();
  if (want === 'current') {
    timeline.length = 0;
    await migrateToCurrent();
    await settled(m.cpNs);
  } else await downgradeToPrevious();
  const what = `set-up: the release moved to the ${want} chart (${((Date.now() - t0) / 1000).toFixed(1)} s)`;
  setupSteps.push({ at: t0, what });
  say(what);
}

/** The cases, in the order the spec has always run them. */
interface FaultCase {
  id: string;
  title: string;
  timeoutMs: number;
  run: (round: number) => Promise<void>;
}

const CASES: FaultCase[] = [
  {
    id: 'f',
    title: `helm upgrade from the previous chart (${PREVIOUS_CHART_COMMIT}, CRDs inside) to minimesh-crds + this chart: 0 failed requests, no user object deleted`,
    timeoutMs: 600_000,
    run: async (round) => {
      await needChart('previous');
      const before = await userObjectUids();
      expect(before.length).toBe(2 * CRDS.length);
      const row = await measure(
        'f',
        round,
        `helm upgrade from the chart of ${PREVIOUS_CHART_COMMIT} (CRDs inside) to minimesh-crds + this chart`,
        async () => {
          // Without the hand-over the chart refuses: Helm would delete the CRDs that leave the release.
          const refused = await driver.helm([
            'upgrade',
            m.release,
            chartDir,
            '-n',
            m.cpNs,
            '--reset-then-reuse-values',
          ]);
          expect(refused.code).not.toBe(0);
          expect(refused.stderr).toContain('belong to this release');
          mark('the upgrade without the hand-over refused');
          await migrateToCurrent();
          return `CRDs handed to minimesh-crds (kubectl annotate, helm install minimesh-crds), control plane upgraded (--reset-then-reuse-values) and rolled out`;
        },
      );
      const after = await userObjectUids();
      expect(after).toEqual(before);
      row.note += `; all ${CRDS.length} CRDs and ${CRDS.length} user objects kept (same uids)`;
      expect(row.failures, row.explain).toEqual([]);
    },
  },
  {
    id: 'a',
    title: 'destination pod deleted: 0 failed requests',
    timeoutMs: 400_000,
    run: async (round) => {
      await needChart('current');
      const row = await measure('a', round, 'destination pod deleted', async () => {
        const pod = await podOf(m.cpNs, `${CP}=destination`);
        await kubectlOk(['delete', 'pod', '-n', m.cpNs, pod.metadata.name, '--wait=false']);
        mark('destination pod deleted');
        const [next] = await readyPods(m, 'destination', { controlPlane: true, timeoutMs: READY_MS });
        return `${pod.metadata.name} deleted, ${next?.metadata.name} ready`;
      });
      expect(row.failures, row.explain).toEqual([]);
    },
  },
  {
    id: 'b',
    title: 'identity down while the proxies renew: 0 failed requests',
    timeoutMs: 400_000,
    run: async (round) => {
      await needChart('current');
      const client = await podOf(m.appNs, 'app=load');
      // The proxy renews at 70 % of the remaining lifetime, counted from its last refresh.
      const schedule = (text: string) => {
        const refreshed = metricSum(text, 'control_identity_cert_refresh_timestamp_seconds') * 1000;
        const expires = metricSum(text, 'control_identity_cert_expiration_timestamp_seconds') * 1000;
        return { refreshed, renewAt: refreshed + Math.max(10_000, 0.7 * (expires - refreshed)) };
      };
      let before = await proxyMetrics(driver, m.appNs, client.metadata.name);
      let { refreshed, renewAt } = schedule(before);
      // A renewal due within 3 s, or overdue (under way: identity answers slowly right after the API
      // server restarted, case d), could still succeed after identity is scaled down; then the next one
      // is a whole period away. Let it finish and aim at the next one.
      if (renewAt - Date.now() < 3000) {
        before = await eventually('the renewal under way to finish', 60_000, async () => {
          const text = await proxyMetrics(driver, m.appNs, client.metadata.name);
          return schedule(text).refreshed > refreshed ? text : undefined;
        });
        ({ refreshed, renewAt } = schedule(before));
      }
      const errorsBefore = metricSum(before, 'control_identity_cert_refreshes_total', { result: 'error' });
      const okBefore = metricSum(before, 'control_identity_cert_refreshes_total', { result: 'ok' });
      const wait = renewAt - Date.now() - 3000;
      if (wait > 0) await sleep(wait);
      let errors = 0;
      const row = await measure(
        'b',
        round,
        `identity pod deleted while the proxies renew (leaves of ${LEAF_LIFETIME})`,
        async () => {
          // Scaled to 0 (the pod is deleted) and kept down until the client's proxy has failed to renew.
          const pod = await podOf(m.cpNs, `${CP}=identity`);
          await kubectlOk(['scale', 'deploy', '-n', m.cpNs, '-l', `${CP}=identity`, '--replicas=0']);
          mark('identity scaled to 0');
          const down = Date.now();
          // Until the renewal is due, plus the certify deadline (10 s) and a margin.
          const failWithin = Math.max(60_000, renewAt - down + 40_000);
          errors = await eventually('a failed renewal while identity is down', failWithin, async () => {
            const text = await proxyMetrics(driver, m.appNs, client.metadata.name);
            const n = metricSum(text, 'control_identity_cert_refreshes_total', { result: 'error' }) - errorsBefore;
            return n > 0 ? n : undefined;
          });
          mark("the client's renewal failed");
          const failedAfter = Date.now() - down;
          await kubectlOk(['scale', 'deploy', '-n', m.cpNs, '-l', `${CP}=identity`, '--replicas=1']);
          const [next] = await readyPods(m, 'identity', { controlPlane: true, timeoutMs: READY_MS });
          return `${pod.metadata.name} deleted (scaled to 0) 3 s before the client's renewal was due; its renewal failed ${(failedAfter / 1000).toFixed(1)} s later; ${next?.metadata.name} ready ${((Date.now() - down) / 1000).toFixed(1)} s after the deletion`;
        },
      );
      // The client's proxy renewed once identity was back.
      await eventually('the client proxy renewed after identity came back', 60_000, async () => {
        const text = await proxyMetrics(driver, m.appNs, client.metadata.name);
        return metricSum(text, 'control_identity_cert_refreshes_total', { result: 'ok' }) > okBefore;
      });
      say(`client proxy: ${errors} renewal(s) failed while identity was down, then renewed`);
      expect(errors).toBeGreaterThan(0);
      expect(row.failures, row.explain).toEqual([]);
    },
  },
  {
    id: 'c1',
    title: 'issuer rotated (new issuer from the same root): 0 failed requests',
    timeoutMs: 400_000,
    run: async (round) => {
      await needChart('current');
      const dir = join(tmp, `issuer-r${round}-${randomBytes(2).toString('hex')}`);
      const row = await measure('c1', round, 'issuer rotated (new issuer, same root)', async () => {
        const reloads = await issuerReloads();
        await minimesh(['certs', 'create', '--ca', certs.caCrt, '--ca-key', certs.caKey, '--dir', dir]);
        mark('new issuer made');
        const next = { ...certFiles(dir), caCrt: certs.caCrt, caKey: certs.caKey };
        await helmOk([
          'upgrade',
          m.release,
          chartDir,
          '-n',
          m.cpNs,
          '--reset-then-reuse-values',
          '--set-file',
          `identity.issuer.tls.crtPEM=${next.issuerCrt}`,
          '--set-file',
          `identity.issuer.tls.keyPEM=${next.issuerKey}`,
        ]);
        certs = next;
        mark('helm upgrade done');
        await eventually(
          'identity reloaded the new issuer',
          120_000,
          async () => (await issuerReloads()) > reloads,
          1000,
        );
        mark('identity reloaded the issuer');
        await everyProxyRenewedAfter(Date.now());
        mark('every proxy renewed');
        return `identity reloaded the issuer without a restart; every proxy renewed from it`;
      });
      expect(row.failures, row.explain).toEqual([]);
    },
  },
  {
    id: 'c2',
    title:
      'trust anchor rotated as docs/certificates.md says (bundle, new issuer, drop the old root): 0 failed requests',
    timeoutMs: 900_000,
    run: async (round) => {
      await needChart('current');
      const dir = join(tmp, `root-r${round}-${randomBytes(2).toString('hex')}`);
      const next = certFiles(dir);
      const old = certs;
      const upgrade = (...sets: string[]) =>
        helmOk(['upgrade', m.release, chartDir, '-n', m.cpNs, '--reset-then-reuse-values', ...sets]);
      const restartApps = async (step: string) => {
        await settled(m.cpNs);
        mark(`${step}: control plane settled (no terminating pod)`);
        await kubectlOk(['rollout', 'restart', 'deploy', '-n', m.appNs]);
        mark(`${step}: workloads restarting`);
        await rolledOut(m.appNs);
        mark(`${step}: workloads rolled out`);
        await settled(m.appNs);
        mark(`${step}: workloads settled`);
      };
      const row = await measure(
        'c2',
        round,
        'trust anchor rotated (bundle, new issuer, old root dropped)',
        async () => {
          // 1. A new root and an issuer under it; the bundle: new first, then old.
          await minimesh(['certs', 'create', '--dir', dir]);
          const bundle = join(dir, 'bundle.crt');
          writeFileSync(bundle, readFileSync(next.caCrt, 'utf8') + readFileSync(old.caCrt, 'utf8'));
          mark('step 1: new root and issuer made');
          // 2. Trust both; the control plane rolls; the workloads restart to get the bundle.
          await upgrade('--set-file', `identityTrustAnchorsPEM=${bundle}`);
          mark('step 2: helm upgrade (bundle) done');
          await rolledOut(m.cpNs);
          mark('step 2: control plane rolled out');
          await restartApps('step 2');
          const bundled = await proxyAnchors();
          expect(
            bundled.every(
              (a) =>
                a.includes(readFileSync(next.caCrt, 'utf8').trim()) &&
                a.includes(readFileSync(old.caCrt, 'utf8').trim()),
            ),
          ).toBe(true);
          // 3. Sign with the new issuer; wait until every leaf is from it.
          const reloads = await issuerReloads();
          await upgrade(
            '--set-file',
            `identity.issuer.tls.crtPEM=${next.issuerCrt}`,
            '--set-file',
            `identity.issuer.tls.keyPEM=${next.issuerKey}`,
          );
          mark('step 3: helm upgrade (new issuer) done');
          await eventually(
            'identity reloaded the new issuer',
            120_000,
            async () => (await issuerReloads()) > reloads,
            1000,
          );
          const reloaded = Date.now();
          mark('step 3: identity reloaded the issuer');
          await everyProxyRenewedAfter(reloaded);
          mark('step 3: every proxy renewed from the new issuer');
          // 4. Drop the old root; restart the workloads.
          await upgrade('--set-file', `identityTrustAnchorsPEM=${next.caCrt}`);
          certs = next;
          mark('step 4: helm upgrade (new root only) done');
          await rolledOut(m.cpNs);
          mark('step 4: control plane rolled out');
          await restartApps('step 4');
          const anchors = await proxyAnchors();
          expect(anchors.every((a) => a.trim() === readFileSync(next.caCrt, 'utf8').trim())).toBe(true);
          return `4 steps of docs/certificates.md; every proxy now trusts only the new root`;
        },
      );
      expect(row.failures, row.explain).toEqual([]);
    },
  },
  {
    id: 'd',
    title: 'kube-apiserver restarted (watch streams cut): 0 failed requests',
    timeoutMs: 400_000,
    run: async (round) => {
      await needChart('current');
      const row = await measure('d', round, 'kube-apiserver restarted (watch streams cut)', async () => {
        mark('kube-apiserver stopping');
        return driver.restartApiServer();
      });
      expect(row.failures, row.explain).toEqual([]);
    },
  },
  {
    id: 'e',
    title: 'a server pod killed mid-stream: only requests already sent to it fail',
    timeoutMs: 400_000,
    run: async (round) => {
      await needChart('current');
      const [victim] = await readyPods(m, 'server', { count: 2, timeoutMs: READY_MS });
      let killedAt = 0;
      const row = await measure('e', round, 'server pod killed mid-stream (SIGKILL, 1 of 2)', async () => {
        const name = victim!.metadata.name;
        const restarts = async () => {
          const p = await kubectlJson<Pod>(driver, ['get', 'pod', '-n', m.appNs, name]);
          const all = [...(p.status.initContainerStatuses ?? []), ...(p.status.containerStatuses ?? [])] as Array<{
            restartCount?: number;
          }>;
          return { n: all.reduce((sum, c) => sum + (c.restartCount ?? 0), 0), ready: isReady(p) };
        };
        const before = (await restarts()).n;
        mark('kill starts');
        const what = await driver.killPodProcesses(m.appNs, name);
        killedAt = Date.now();
        mark('kill done');
        // Back: the kubelet restarted its containers and the pod is ready again.
        await eventually(`${name} restarted and ready`, 180_000, async () => {
          const r = await restarts();
          return r.n > before && r.ready;
        });
        await readyPods(m, 'server', { count: 2, timeoutMs: READY_MS });
        return `${what}; restarted by the kubelet, ready again`;
      });
      // In flight: sent before the client's side could know the pod was gone, i.e. before the first
      // failure came back (the connection's reset). Nothing sent after that may fail.
      const learned = Math.min(...row.failures.map((f) => f.at));
      const late = row.failures.filter((f) => f.sent >= learned);
      const afterKill = row.failures.filter((f) => f.sent > killedAt).length;
      row.note += `; in flight (sent before the first failure came back): ${row.failed - late.length}, of which ${afterKill} sent in the ms between the kill and the reset reaching the client; sent after: ${late.length}`;
      expect(late, row.explain).toEqual([]);
    },
  },
];

/** mulberry32: a small seeded generator, so a shuffled order can be run again from its seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The order of the cases in each round: as written, or shuffled (MINIMESH_FAULTS_ORDER=shuffle[:seed]). */
function plan(): { rounds: FaultCase[][]; order: string } {
  const rounds = Number(process.env.MINIMESH_FAULTS_ROUNDS ?? '1');
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`MINIMESH_FAULTS_ROUNDS=${process.env.MINIMESH_FAULTS_ROUNDS}: expected a whole number ≥ 1`);
  const spec = process.env.MINIMESH_FAULTS_ORDER ?? 'written';
  const m = /^shuffle(?::(\d+))?$/.exec(spec);
  if (spec !== 'written' && !m)
    throw new Error(`MINIMESH_FAULTS_ORDER=${spec}: expected "written", "shuffle" or "shuffle:<seed>"`);
  if (!m) return { rounds: Array.from({ length: rounds }, () => CASES), order: 'as written' };
  const seed = m[1] ? Number(m[1]) : Math.floor(Math.random() * 1e9);
  const rand = seeded(seed);
  const out = Array.from({ length: rounds }, () => {
    const c = [...CASES];
    for (let i = c.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [c[i], c[j]] = [c[j] as FaultCase, c[i] as FaultCase];
    }
    return c;
  });
  return { rounds: out, order: `shuffled, seed ${seed} (MINIMESH_FAULTS_ORDER=shuffle:${seed} repeats it)` };
}
const { rounds: ROUNDS, order: ORDER } = plan();

beforeAll(async () => {
  runStart = Date.now();
  const commit = await run('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD']).catch(() => undefined);
  art.write(
    'report.md',
    `# Faults under load: ${new Date().toISOString()}, commit ${commit?.stdout.trim() ?? '?'}, ${driver.name} cluster\n\n` +
      `Load: ${RPS} requests a second. Order: ${ORDER}: ${ROUNDS.map((r) => r.map((c) => c.id).join(' ')).join(' | ')}\n`,
  );
  art.write('failures.jsonl', '');
  say(await driver.setup());
  // Watch from the start: every pod change, every container's log, where the CPU went.
  pods = new PodWatch(driver, [m.appNs, m.cpNs]);
  logs = new LogFollower(driver, (ns, pod) => art.path(`logs/pods/${ns}_${pod}.log`));
  pods.onChange((c) => logs.seen(c));
  pods.start();
  if (existsSync('/proc/stat')) {
    cpu = new CpuSampler((uid) => pods.podOfUid(uid)?.split('/')[1]);
    cpu.start();
  }
  tmp = mkdtempSync(join(tmpdir(), 'mm-e2e-faults-'));
  certs = await createMeshCerts(join(tmp, 'certs'));
  // The previous chart, as released at that commit.
  const old = join(tmp, 'previous');
  mkdirSync(old);
  const r = await run('bash', [
    '-c',
    `set -o pipefail; git -C "${repoRoot}" archive ${PREVIOUS_CHART_COMMIT} charts/ | tar -x -C "${old}"`,
  ]);
  if (r.code !== 0)
    throw new Error(
      `cannot extract the previous chart (git archive ${PREVIOUS_CHART_COMMIT} charts/): ${r.stderr.trim()}; the e2e needs the repository's history`,
    );
  previousChart = join(old, 'charts', 'minimesh');
  // A cluster where an earlier spec left the CRDs with minimesh-crds: the previous chart takes them over,
  // as it had them (no keep annotation).
  await applyObjects(driver, previousChartShim());
  await crdsNotDeleting(driver, CRDS);
  say(await installChart(m, certs, { chart: previousChart, crds: false }));
  await crdsServed(driver, CRDS);
  await kubectlOk(['annotate', 'crd', ...CRDS, 'helm.sh/resource-policy-']);
  release = 'previous';
  for (const c of CONTROL_PLANE) await readyPods(m, c, { controlPlane: true, timeoutMs: READY_MS });
  const apps = appObjects(m, 2)
    .filter((o) => !(o.kind === 'Deployment' && o.metadata.name === 'client'))
    .map((o) => (o.kind === 'Deployment' && o.metadata.name === 'server' ? withPreStopSleep(o) : o));
  // The server first, ready and in its Service's EndpointSlice, then the load: a load that starts
  // before the Service has an endpoint fails its first requests (seen once: 502 EHOSTUNREACH from the
  // ClusterIP at +0.8 s, 100 ms before the slice listed the pods), and that is no fault of the mesh.
  await applyObjects(driver, apps);
  await applyObjects(driver, userObjects());
  await readyPods(m, 'server', { count: 2, timeoutMs: READY_MS });
  await eventually("both server pods in the server Service's EndpointSlice", READY_MS, async () => {
    const out = await kubectlOk([
      'get',
      'endpointslices',
      '-n',
      m.appNs,
      '-l',
      'kubernetes.io/service-name=server',
      '-o',
      'jsonpath={range .items[*].endpoints[*]}{.conditions.ready}{"\\n"}{end}',
    ]);
    return out.split('\n').filter((l) => l === 'true').length >= 2 ? true : undefined;
  });
  await applyObjects(
    driver,
    loadObjects({
      driver,
      ns: m.appNs,
      sa: 'client',
      rps: RPS,
      // 50 ms at the server: about 10 requests in flight at any time, so a killed pod has some.
      url: `http://server.${m.appNs}.svc.cluster.local:8080/delay/50`,
    }),
  );
  await readyPods(m, 'load', { timeoutMs: READY_MS });
  load = new LoadCollector(driver, m.appNs, 'app=load', say);
  load.start();
  await flowing();
  say(`load flowing: ${RPS} rps from ${load.podNames().join(', ')}`);
}, 900_000);

afterAll(async () => {
  load?.stop();
  pods?.stop();
  logs?.stop();
  cpu?.stop();
  if (rows.length > 0) {
    const table = [
      '| Fault | Requests sent | Failed | Recovery time | Notes |',
      '| --- | --- | --- | --- | --- |',
      ...rows.map(
        (r) =>
          `| ${r.id}. ${r.fault}${r.round > 1 ? ` (round ${r.round})` : ''} | ${r.sent.toLocaleString('en')} | ${r.failed} | ${(r.recoveryMs / 1000).toFixed(1)} s | ${r.note} |`,
      ),
    ];
    // Requests outside every measured window (the set-up between cases), so no failure goes unseen.
    const all = load.allFailures();
    const outside = all.filter((f) => !rows.some((r) => f.sent > r.from && f.sent <= r.to));
    const total = load.totalsAt(Date.now());
    const inWindows = rows.reduce((s, r) => s + r.sent, 0);
    table.push(
      `| (between the faults: start, set-up steps${setupSteps.length ? `: ${setupSteps.map((s) => s.what.replace('set-up: ', '')).join('; ')}` : ''}) | ${(total.sent - inWindows).toLocaleString('en')} | ${outside.length} | | not a fault: counted so that no failure goes unseen |`,
    );
    say(`\n## The table (docs/reliability.md)\n\n${table.join('\n')}\n`);
    if (outside.length > 0) {
      say(`failed outside the measured windows:\n  ${summarize(outside, runStart, false).join('\n  ')}`);
      for (const f of outside) art.append('failures.jsonl', `${JSON.stringify({ case: 'between', ...f })}\n`);
    }
    art.write('table.md', `${table.join('\n')}\n`);
    art.write(
      'rows.json',
      `${JSON.stringify(
        {
          order: ORDER,
          rps: RPS,
          started: new Date(runStart).toISOString(),
          seconds: Math.round((Date.now() - runStart) / 1000),
          rows: rows.map(({ failures: _f, ...r }) => r),
          between: { sent: total.sent - inWindows, failed: outside.length },
        },
        null,
        2,
      )}\n`,
    );
    for (const [pod, text] of load.logs()) art.write(`load/${pod}.log`, text);
    art.write('pods.txt', `${pods.between(runStart, Date.now(), runStart).join('\n')}\n`);
    if (cpu) art.write('cpu.txt', `${cpu.between(runStart, Date.now(), runStart).join('\n')}\n`);
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  if (process.env.MINIMESH_E2E_KEEP === '1') return;
  const shim = `minimesh-e2e-previous-${m.cpNs}`;
  await driver.kubectl(['delete', 'clusterrolebinding,clusterrole', shim, '--ignore-not-found']);
  await driver.kubectl(['delete', 'namespace', m.appNs, '--wait=false', '--ignore-not-found']);
  if (driver.name === 'local') await uninstallChart(m);
}, 300_000);

describe(`faults under load (${RPS} rps, mTLS) on the ${driver.name} cluster`, () => {
  ROUNDS.forEach((cases, i) => {
    for (const c of cases)
      it(`${c.id}. ${c.title}${ROUNDS.length > 1 ? ` (round ${i + 1})` : ''}`, () => c.run(i + 1), c.timeoutMs);
  });
  // Last (tests run in the order written): the requests sent outside every fault's window — the start,
  // the set-up steps between the cases — failed none either.
  it('between the faults (the start, the set-up steps): 0 failed requests', () => {
    const outside = load.allFailures().filter((f) => !rows.some((r) => f.sent > r.from && f.sent <= r.to));
    expect(summarize(outside, runStart, false)).toEqual([]);
  });
});
