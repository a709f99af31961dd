// The flows the e2e specs and the demo share: certificates, the chart install (the Linkerd tutorial's install command),
// waiting, and reading pods and proxy metrics through the driver.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Driver } from '../drivers/types.js';
import { certFiles, type CertFiles } from './certs.js';
import { tutorialInstallArgs, type K8sObject } from './chart.js';
import { chartDir, cliMain, crdsChartDir, repoRoot, run, runOk, type RunResult } from './tools.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Label the e2e puts on its app namespaces; the webhook of an e2e install only sees those. */
export const E2E_SCOPE_LABEL = 'mm-e2e-mesh';

export interface MeshSetup {
  driver: Driver;
  /** Control-plane namespace (and helm release namespace). */
  cpNs: string;
  /** Namespace of the client and server apps. */
  appNs: string;
  release: string;
  /** Scope the webhook to namespaces labelled mm-e2e-mesh=<cpNs> (shared clusters). */
  scopeWebhook: boolean;
  /** More chart values (helm --set), e.g. viz.enabled=true. */
  sets?: readonly string[];
  log?: (line: string) => void;
}

/**
 * A spec's MeshSetup: on k3d the install `npm run k3d -- up` made (helm upgrade keeps it, or
 * MINIMESH_E2E_NAMESPACE), on the local cluster a control-plane namespace of the spec's own; release
 * `minimesh`; on the shared local cluster other tests create pods too, so the webhook only sees the
 * spec's namespaces.
 */
export function specMeshSetup(driver: Driver, o: { cpNs: string; appNs: string; sets?: readonly string[] }): MeshSetup {
  return {
    driver,
    cpNs: process.env.MINIMESH_E2E_NAMESPACE ?? (driver.name === 'k3d' ? 'minimesh' : o.cpNs),
    appNs: o.appNs,
    release: 'minimesh',
    scopeWebhook: driver.name === 'local',
    ...(o.sets ? { sets: o.sets } : {}),
  };
}

/** Polls `check` until it returns a value other than undefined/false, or throws after timeoutMs. */
export async function eventually<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined | false>,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      if ((err as Error).constructor.name === 'StuckError') throw err;
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${what}: not true after ${Math.round(timeoutMs / 1000)}s${last ? ` (last error: ${(last as Error).message})` : ''}`,
      );
    }
    await sleep(everyMs);
  }
}

/** `minimesh certs create` into dir (ca.crt, ca.key, issuer.crt, issuer.key). */
export async function createMeshCerts(dir: string): Promise<CertFiles> {
  mkdirSync(dir, { recursive: true });
  await runOk(process.execPath, [cliMain, 'certs', 'create', '--dir', dir, '--force']);
  return certFiles(dir);
}

/** The release of charts/minimesh-crds (docs/chart.md: installed first, in the control plane's namespace). */
export const CRDS_RELEASE = 'minimesh-crds';

/** `helm upgrade --install minimesh-crds charts/minimesh-crds`: the CRDs the control plane requires (issue 31). */
export async function installCrds(m: MeshSetup, chart = crdsChartDir): Promise<string> {
  const args = [
    'upgrade',
    '--install',
    CRDS_RELEASE,
    chart,
    '-n',
    m.cpNs,
    '--create-namespace',
    // The CRDs are cluster-wide and outlive every release: adopt them from the release of an earlier spec
    // (whose namespace is gone), and their fields from a package test that applied them with its own
    // field manager (packages/policy's CRD test), or from a spec that stopped half-way.
    '--take-ownership',
    '--force-conflicts',
    '--wait',
    '--timeout',
    '120s',
  ];
  const r = await m.driver.helm(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed: ${r.stderr.trim()}`);
  return `helm ${args.join(' ')}`;
}

/**
 * The CRDs' chart (unless `crds: false`: a chart that still has them inside, e.g. an earlier release's),
 * then the control plane with the Linkerd tutorial's install command (plus, on shared clusters, the webhook scope). Returns
 * the commands, one per line.
 */
export async function installChart(
  m: MeshSetup,
  certs: CertFiles,
  opts: { chart?: string; crds?: boolean } = {},
): Promise<string> {
  const crds = opts.crds === false ? [] : [await installCrds(m)];
  const args = [
    'upgrade',
    '--install',
    m.release,
    opts.chart ?? chartDir,
    '-n',
    m.cpNs,
    '--create-namespace',
    // An earlier release's chart with the CRDs inside adopts the ones the CRDs' chart (or an aborted run)
    // left behind, fields and all.
    '--take-ownership',
    '--force-conflicts',
    ...tutorialInstallArgs(certs),
  ];
  if (m.scopeWebhook) args.push('--set', `proxyInjector.namespaceSelector.matchLabels.${E2E_SCOPE_LABEL}=${m.cpNs}`);
  args.push(...(m.driver.chartArgs?.() ?? []));
  for (const s of m.sets ?? []) args.push('--set', s);
  const r = await m.driver.helm(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed: ${r.stderr.trim()}`);
  return [...crds, `helm ${args.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')}`].join('\n');
}

interface Crd {
  metadata: { name: string; deletionTimestamp?: string };
  spec?: { group?: string };
  status?: { conditions?: { type: string; status: string; reason?: string }[] };
}

/** Every CRD of the cluster; undefined when kubectl could not list them. */
async function listCrds(driver: Driver): Promise<Crd[] | undefined> {
  return kubectlJson<{ items: Crd[] }>(driver, ['get', 'crd']).then(
    (list) => list.items,
    () => undefined,
  );
}

/** Established, and not being deleted. */
function crdServes(c: Crd | undefined): boolean {
  return (
    c !== undefined &&
    !c.metadata.deletionTimestamp &&
    (c.status?.conditions ?? []).some((x) => x.type === 'Established' && x.status === 'True')
  );
}

/** The state of a CRD as a line for an error: absent, being deleted, or its conditions. */
function crdState(name: string, c: Crd | undefined): string {
  if (!c) return `${name}: absent`;
  const conds = (c.status?.conditions ?? []).map((x) => `${x.type}=${x.status}${x.reason ? ` (${x.reason})` : ''}`);
  const del = c.metadata.deletionTimestamp ? `, being deleted since ${c.metadata.deletionTimestamp}` : '';
  return `${name}: ${conds.join(', ') || 'no conditions yet'}${del}`;
}

/**
 * Waits until every named CRD is Established, not being deleted, and its kind is in the API server's
 * discovery (what `kubectl apply` maps objects with): objects of a CRD that a chart has only just
 * created, or that an earlier run's uninstall is still deleting, are refused with "no matches for
 * kind". On timeout, says each CRD's state.
 */
export async function crdsServed(driver: Driver, names: readonly string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let states: string[] = [];
  for (;;) {
    const items = (await listCrds(driver)) ?? [];
    const byName = new Map(items.map((c) => [c.metadata.name, c]));
    states = names.map((n) => crdState(n, byName.get(n)));
    if (names.every((n) => crdServes(byName.get(n)))) {
      const groups = [...new Set(names.map((n) => n.slice(n.indexOf('.') + 1)))];
      const served = new Set<string>();
      for (const g of groups) {
        const r = await driver.kubectl(['api-resources', `--api-group=${g}`, '-o', 'name']);
        if (r.code === 0) for (const line of r.stdout.split('\n')) if (line.trim()) served.add(line.trim());
      }
      const missing = names.filter((n) => !served.has(n));
      if (missing.length === 0) return;
      states = [...states, `not yet in the API server's discovery: ${missing.join(', ')}`];
    }
    if (Date.now() > deadline)
      throw new Error(`the CRDs are not served after ${timeoutMs / 1000} s:\n  ${states.join('\n  ')}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Waits until none of the named CRDs is being deleted (absent or in service): Helm's --take-ownership
 * adopts a CRD that an earlier uninstall is still deleting, and its objects then have no kind to go to.
 */
export async function crdsNotDeleting(driver: Driver, names: readonly string[], timeoutMs = 120_000): Promise<void> {
  await eventually(`CRDs not being deleted (${names.join(', ')})`, timeoutMs, async () => {
    const items = await listCrds(driver);
    if (items === undefined) return false;
    return !items.some((c) => names.includes(c.metadata.name) && c.metadata.deletionTimestamp);
  });
}

export async function uninstallChart(m: MeshSetup): Promise<void> {
  await m.driver.helm(['uninstall', m.release, '-n', m.cpNs, '--wait', '--timeout', '60s']);
  await m.driver.kubectl(['delete', 'namespace', m.cpNs, '--wait=false', '--ignore-not-found']);
}

export async function kubectlJson<T = K8sObject>(driver: Driver, args: readonly string[]): Promise<T> {
  const r = await driver.kubectl([...args, '-o', 'json']);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout) as T;
}

export async function applyObjects(driver: Driver, objects: readonly K8sObject[]): Promise<void> {
  const text = objects.map((o) => `---\n${stringify(o)}`).join('');
  const r = await driver.kubectl(['apply', '-f', '-'], text);
  if (r.code === 0) return;
  // A kind the API server does not serve: say what became of the CRDs the objects need.
  const unmapped = [...r.stderr.matchAll(/no matches for kind "([^"]+)" in version "([^"/]+)\//g)];
  let crds = '';
  if (unmapped.length > 0) {
    const items = (await listCrds(driver)) ?? [];
    const groups = new Set(unmapped.map((u) => u[2]));
    const lines = items.filter((c) => groups.has(c.spec?.group ?? '')).map((c) => crdState(c.metadata.name, c));
    crds = `\nthe CRDs of ${[...groups].join(', ')} now: ${lines.length > 0 ? `\n  ${lines.join('\n  ')}` : 'none'}`;
  }
  throw new Error(`kubectl apply: ${r.stderr.trim()}${crds}`);
}

/**
 * The Gateway API's HTTPRoute, GRPCRoute, TLSRoute and TCPRoute CRDs (sigs.k8s.io/gateway-api v1.6.3, scripts/gateway-api.sh),
 * applied server-side as a cluster admin would (the CRDs are too large for a client-side apply's
 * last-applied annotation); CRDs the cluster has already are updated to that version.
 */
export async function ensureGatewayApiCrds(driver: Driver): Promise<void> {
  const text = await runOk('bash', [join(repoRoot, 'scripts', 'gateway-api.sh'), 'crds'], { timeoutMs: 300_000 });
  const r = await driver.kubectl(['apply', '--server-side', '--field-manager=minimesh-e2e', '-f', '-'], text);
  if (r.code !== 0) throw new Error(`kubectl apply (Gateway API CRDs): ${r.stderr.trim()}`);
  const established = await driver.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/httproutes.gateway.networking.k8s.io',
    'crd/grpcroutes.gateway.networking.k8s.io',
    'crd/tlsroutes.gateway.networking.k8s.io',
    'crd/tcproutes.gateway.networking.k8s.io',
  ]);
  if (established.code !== 0) throw new Error(`Gateway API CRDs not established: ${established.stderr.trim()}`);
}

export interface Pod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: { initContainers?: PodContainer[]; containers: PodContainer[]; serviceAccountName?: string };
  status: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    initContainerStatuses?: { name: string; ready: boolean; started?: boolean; state?: Record<string, unknown> }[];
    containerStatuses?: { name: string; ready: boolean }[];
  };
}
export interface PodContainer {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  restartPolicy?: string;
  startupProbe?: unknown;
  env?: { name: string; value?: string }[];
  securityContext?: Record<string, unknown>;
}

export function isReady(p: Pod): boolean {
  return p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

export async function listPods(driver: Driver, ns: string, selector: string): Promise<Pod[]> {
  const list = await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', ns, '-l', selector]);
  return list.items;
}

/** What to do about an image the cluster does not have (the local cluster never pulls). */
export const IMAGES_HINT = 'an image is not built: run bash scripts/images.sh build (docs/local-cluster.md)';

/** The message for containers that cannot start; an image that is not there gets the command that builds it. */
export function stuckMessage(ns: string, app: string, stuck: readonly string[]): string {
  const hint = stuck.some((l) => l.includes(': ErrImageNeverPull')) ? `\n  ${IMAGES_HINT}` : '';
  return `${ns}/${app}: containers cannot start:\n  ${stuck.join('\n  ')}${hint}`;
}

/** Container states that will not fix themselves: waiting for them longer than a few seconds is pointless. */
const STUCK_REASONS = new Set([
  'ErrImageNeverPull',
  'CreateContainerError',
  'InvalidImageName',
  'CreateContainerConfigError',
]);

/** "pod/container: reason: message" for every container that is waiting or crashed. */
export function containerProblems(pods: readonly Pod[]): string[] {
  const out: string[] = [];
  for (const p of pods) {
    const statuses = [
      ...(p.status.initContainerStatuses ?? []),
      ...((p.status.containerStatuses ?? []) as ContainerStatus[]),
    ] as ContainerStatus[];
    for (const st of statuses) {
      const waiting = st.state?.waiting as { reason?: string; message?: string } | undefined;
      const last = (st as { lastState?: { terminated?: { exitCode?: number; reason?: string } } }).lastState
        ?.terminated;
      if (waiting)
        out.push(
          `${p.metadata.name}/${st.name}: ${waiting.reason ?? 'waiting'}${waiting.message ? `: ${waiting.message}` : ''}${last ? ` (last exit ${last.exitCode})` : ''}`,
        );
    }
  }
  return out;
}
type ContainerStatus = { name: string; ready: boolean; state?: Record<string, unknown> };

/** Waits until the Deployment has `replicas` ready pods and no others; returns them. Fails early on stuck containers. */
export async function waitForReadyPods(
  driver: Driver,
  ns: string,
  app: string,
  replicas: number,
  timeoutMs: number,
  selectorKey = 'app',
): Promise<Pod[]> {
  let stuckSince = 0;
  return eventually(
    `${ns}/${app}: ${replicas} ready pod(s)`,
    timeoutMs,
    async () => {
      const pods = (await listPods(driver, ns, `${selectorKey}=${app}`)).filter(
        (p) => p.status.phase !== 'Succeeded' && p.status.phase !== 'Failed',
      );
      const ready = pods.filter(isReady);
      if (ready.length === replicas && pods.length === replicas) return ready;
      const stuck = containerProblems(pods).filter((line) => [...STUCK_REASONS].some((r) => line.includes(`: ${r}`)));
      if (stuck.length === 0) stuckSince = 0;
      else if (stuckSince === 0) stuckSince = Date.now();
      else if (Date.now() - stuckSince > 20_000) throw new StuckError(stuckMessage(ns, app, stuck));
      return undefined;
    },
    1000,
  );
}

class StuckError extends Error {}

/** Explains why a component is not ready (for failure messages): pods, container problems, recent events. */
export async function describePods(driver: Driver, ns: string): Promise<string> {
  const r = await driver.kubectl(['get', 'pods', '-n', ns, '-o', 'wide']);
  const pods = await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', ns]).then(
    (l) => l.items,
    () => [],
  );
  const events = await driver.kubectl(['get', 'events', '-n', ns, '--sort-by=.lastTimestamp']);
  // The last words of every container that is not ready.
  const tails: string[] = [];
  for (const p of pods) {
    const statuses = [
      ...(p.status.initContainerStatuses ?? []),
      ...((p.status.containerStatuses ?? []) as ContainerStatus[]),
    ] as ContainerStatus[];
    for (const st of statuses.filter((x) => !x.ready && !('terminated' in (x.state ?? {})))) {
      const text = (await driver.logs(ns, p.metadata.name, st.name).catch(() => ''))
        .trim()
        .split('\n')
        .slice(-6)
        .join('\n    ');
      if (text) tails.push(`--- ${p.metadata.name}/${st.name} (last lines)\n    ${text}`);
    }
  }
  return `${r.stdout}\n${containerProblems(pods).join('\n')}\n${tails.join('\n')}\n${events.stdout.split('\n').slice(-15).join('\n')}`;
}

/** The proxy's Prometheus text from its admin port, through the API server's pod proxy. */
export async function proxyMetrics(driver: Driver, ns: string, pod: string, adminPort = 4191): Promise<string> {
  const r = await driver.kubectl(['get', '--raw', `/api/v1/namespaces/${ns}/pods/${pod}:${adminPort}/proxy/metrics`]);
  if (r.code !== 0) throw new Error(`metrics of ${ns}/${pod}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Metric lines (not comments) of one metric name whose labels contain every given label. */
export function metricLines(text: string, name: string, labels: Record<string, string> = {}): string[] {
  return text.split('\n').filter((l) => {
    if (!l.startsWith(`${name}{`) && !l.startsWith(`${name} `)) return false;
    return Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`));
  });
}

/** Sum of the values of matching metric lines. */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  return metricLines(text, name, labels).reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

export const SERVER_HTTP_PORT = 8080;
export const SERVER_GRPC_PORT = 9090;

/** The identity a workload's proxy gets: <sa>.<ns>.serviceaccount.identity.<cpNs>.<trust domain>. */
export function identityOf(sa: string, ns: string, cpNs: string, trustDomain = 'cluster.local'): string {
  return `${sa}.${ns}.serviceaccount.identity.${cpNs}.${trustDomain}`;
}

/** JSON lines a client container printed ({ n, status|ok, pod, ms } or { n, error }). */
export interface ClientLine {
  n: number;
  status?: number;
  ok?: boolean;
  pod?: string;
  ms?: number;
  error?: string;
}
export function parseClientLines(text: string): ClientLine[] {
  const out: ClientLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as ClientLine);
    } catch {
      /* partial line */
    }
  }
  return out;
}

/**
 * `minimesh <args>` against the spec's cluster, as a user runs it: the driver's kube flags, and the
 * spec's control-plane namespace for `viz` commands.
 */
export function minimeshCli(m: Pick<MeshSetup, 'driver' | 'cpNs'>) {
  return (args: readonly string[], timeoutMs = 60_000): Promise<RunResult> => {
    const cp = args[0] === 'viz' ? ['--control-plane-namespace', m.cpNs] : [];
    return run(process.execPath, [cliMain, ...args, ...m.driver.kubeArgs(), ...cp], { timeoutMs });
  };
}
