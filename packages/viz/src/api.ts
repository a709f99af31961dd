// The viz API: what `minimesh viz stat|edges|tap|top` and the dashboard ask, the same functions for
// both. Kubernetes objects and Prometheus answers in; rows and records out.
import { toEdgeRows, type EdgeRow } from './edges.js';
import { VizError } from './errors.js';
import {
  hasProxy,
  getPod,
  listNamespaces,
  listPods,
  listResourceNames,
  podProxyPath,
  requireNamespace,
  requireResource,
  serviceProxyPath,
  parseServiceUrl,
  statusMessageOf,
  type VizKube,
} from './kube-io.js';
import { edgeQueries, historyQueries, parseWindow, statQueries } from './promql.js';
import type { PrometheusClient, Sample, Series } from './prometheus.js';
import type { Resource, ResourceKind } from './resource.js';
import { toStatRows, type StatRow } from './stat.js';
import { statOutboundQueries, toStatOutboundRows, type StatOutboundRow } from './stat-outbound.js';
import { authzQueries, toAuthzRows, type AuthzRow } from './authz.js';
import type { TapRecord } from './tap-record.js';
import { groupWorkloads, toPodInfo, type PodInfo, type Workload } from './workloads.js';

export interface VizDeps {
  kube: VizKube;
  /** Resolved on first use: the minimesh-viz ConfigMap, or --prometheus-url. */
  prometheus: () => Promise<PrometheusClient>;
}

export interface StatRequest {
  resource: Resource;
  /** '' means every namespace. */
  namespace: string;
  from?: Resource;
  to?: Resource;
  window: string;
}

async function workloadsOf(
  kube: VizKube,
  kind: ResourceKind,
  namespace: string,
  name: string,
): Promise<{ workloads: Workload[]; pods: PodInfo[] }> {
  const pods = (await listPods(kube, kind === 'namespace' && name !== '' ? name : namespace)).map(toPodInfo);
  const workloads = groupWorkloads(pods, kind, name);
  // Objects with no pods (scaled to zero, or every pod finished) are rows too.
  const have = new Set(workloads.map((w) => `${w.namespace}/${w.name}`));
  if (kind !== 'pod') {
    for (const o of await listResourceNames(kube, kind, kind === 'namespace' ? '' : namespace)) {
      if (name !== '' && o.name !== name) continue;
      if (kind === 'namespace' && namespace !== '' && o.name !== namespace && name === '') continue;
      if (!have.has(`${o.namespace}/${o.name}`))
        workloads.push({ kind, namespace: o.namespace, name: o.name, pods: [] });
    }
  }
  workloads.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  return { workloads, pods };
}

/** `viz stat`: golden metrics per workload, joined with the pods Kubernetes has. */
export async function getStat(deps: VizDeps, req: StatRequest): Promise<StatRow[]> {
  const window = parseWindow(req.window);
  if (req.namespace !== '') await requireNamespace(deps.kube, req.namespace);
  await requireResource(deps.kube, { ...req.resource, namespace: req.namespace });
  if (req.from) await requireResource(deps.kube, req.from);
  if (req.to) await requireResource(deps.kube, req.to);
  const { plan, queries } = statQueries({ ...req, resource: { ...req.resource, namespace: req.namespace } });
  const [{ workloads }, prom] = await Promise.all([
    workloadsOf(deps.kube, req.resource.kind, req.namespace, req.resource.name),
    deps.prometheus(),
  ]);
  const [requests, p50, p95, p99, tcpConnections, readBytes, writeBytes] = await Promise.all([
    prom.query(queries.requests),
    prom.query(queries.p50),
    prom.query(queries.p95),
    prom.query(queries.p99),
    prom.query(queries.tcpConnections),
    prom.query(queries.readBytes),
    prom.query(queries.writeBytes),
  ]);
  return toStatRows({
    kind: req.resource.kind,
    plan,
    windowSeconds: window.seconds,
    workloads,
    results: { requests, p50, p95, p99, tcpConnections, readBytes, writeBytes },
    includeMetricsOnly: Boolean(req.from),
  });
}

/**
 * A workload's queries over a window (the workload checked first), asked at once: the answers by the
 * queries' keys, and the window in seconds.
 */
async function queryWorkload<K extends string>(
  deps: VizDeps,
  req: { resource: Resource; namespace: string; window: string },
  queries: (q: { kind: Resource['kind']; namespace: string; name: string; window: string }) => Record<K, string>,
): Promise<{ results: Record<K, Sample[]>; seconds: number }> {
  const window = parseWindow(req.window);
  await requireNamespace(deps.kube, req.namespace);
  await requireResource(deps.kube, { ...req.resource, namespace: req.namespace });
  const q = queries({
    kind: req.resource.kind,
    namespace: req.namespace,
    name: req.resource.name,
    window: window.text,
  });
  const prom = await deps.prometheus();
  const keys = Object.keys(q) as K[];
  const answers = await Promise.all(keys.map((k) => prom.query(q[k])));
  return {
    results: Object.fromEntries(keys.map((k, i) => [k, answers[i] ?? []])) as Record<K, Sample[]>,
    seconds: window.seconds,
  };
}

/** `viz stat-outbound`: a workload's outbound traffic per Service, route and backend. */
export async function getStatOutbound(
  deps: VizDeps,
  req: { resource: Resource; namespace: string; window: string },
): Promise<StatOutboundRow[]> {
  const { results, seconds } = await queryWorkload(deps, req, statOutboundQueries);
  return toStatOutboundRows(results, seconds);
}

/** `viz authz`: a workload's inbound requests per Server, route and authorization. */
export async function getAuthz(
  deps: VizDeps,
  req: { resource: Resource; namespace: string; window: string },
): Promise<AuthzRow[]> {
  const { results, seconds } = await queryWorkload(deps, req, authzQueries);
  return toAuthzRows(results, seconds);
}

/** `viz edges`: who talks to whom, secured or not. */
export async function getEdges(deps: VizDeps, req: { kind: ResourceKind; namespace: string }): Promise<EdgeRow[]> {
  if (req.namespace !== '') await requireNamespace(deps.kube, req.namespace);
  const q = edgeQueries(req);
  const prom = await deps.prometheus();
  const [pods, inbound, ...outbound] = await Promise.all([
    listPods(deps.kube, ''),
    prom.query(q.inbound),
    ...q.outbound.map((x) => prom.query(x)),
  ]);
  return toEdgeRows({
    kind: req.kind,
    outbound: outbound.flat(),
    inbound,
    workloads: groupWorkloads(pods.map(toPodInfo), req.kind),
  });
}

export interface HistoryPoint {
  t: number;
  rps: number | null;
  successRate: number | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

/**
 * RPS, success rate and latency quantiles over the last `minutes`, per workload ("<namespace>/<name>"),
 * for the dashboard's sparklines and charts.
 */
export async function getHistory(
  deps: VizDeps,
  req: { resource: Resource; namespace: string; minutes: number; stepSeconds: number; now?: number },
): Promise<Record<string, HistoryPoint[]>> {
  if (!(req.minutes >= 1 && req.minutes <= 24 * 60))
    throw new VizError('MINIMESH_VIZ_BAD_INPUT', `minutes ${req.minutes} is not valid: expected 1 to 1440`);
  if (!(req.stepSeconds >= 1 && (req.minutes * 60) / req.stepSeconds <= 11_000))
    throw new VizError('MINIMESH_VIZ_BAD_INPUT', `step ${req.stepSeconds}s is not valid for ${req.minutes} minutes`);
  const sq = { resource: { ...req.resource, namespace: req.namespace }, namespace: req.namespace, window: '1m' };
  const q = historyQueries(sq);
  const { plan } = statQueries(sq);
  const prom = await deps.prometheus();
  const end = Math.floor((req.now ?? Date.now()) / 1000 / req.stepSeconds) * req.stepSeconds;
  const range = { start: end - req.minutes * 60, end, step: req.stepSeconds };
  const [rps, sr, p50, p95, p99] = await Promise.all(
    [q.rps, q.successRate, q.p50, q.p95, q.p99].map((x) => prom.queryRange(x, range)),
  );
  const out: Record<string, HistoryPoint[]> = {};
  const index = new Map<string, Map<number, HistoryPoint>>();
  const pointsOf = (m: Record<string, string>) => {
    const key = `${m[plan.namespaceLabel] ?? ''}/${m[plan.nameLabel] ?? ''}`;
    let byT = index.get(key);
    if (!byT) {
      byT = new Map();
      const list: HistoryPoint[] = [];
      for (let t = range.start; t <= range.end; t += range.step) {
        const p: HistoryPoint = { t, rps: null, successRate: null, p50: null, p95: null, p99: null };
        byT.set(t, p);
        list.push(p);
      }
      index.set(key, byT);
      out[key] = list;
    }
    return byT;
  };
  const fill = (series: Series[] | undefined, k: Exclude<keyof HistoryPoint, 't'>) => {
    for (const s of series ?? []) {
      const byT = pointsOf(s.metric);
      for (const [t, v] of s.values) {
        const p = byT.get(t);
        if (p && Number.isFinite(v)) p[k] = v;
      }
    }
  };
  fill(rps, 'rps');
  fill(sr, 'successRate');
  fill(p50, 'p50');
  fill(p95, 'p95');
  fill(p99, 'p99');
  return out;
}

/** Namespaces with how many of their pods are meshed, for the dashboard's first page. */
export async function getNamespaces(
  deps: VizDeps,
): Promise<Array<{ name: string; meshedPods: number; totalPods: number }>> {
  const [names, pods] = await Promise.all([listNamespaces(deps.kube), listPods(deps.kube, '')]);
  const infos = pods.map(toPodInfo).filter((p) => p.status !== 'Succeeded' && p.status !== 'Failed');
  return names.sort().map((name) => {
    const mine = infos.filter((p) => p.namespace === name);
    return { name, meshedPods: mine.filter((p) => p.meshed).length, totalPods: mine.length };
  });
}

/** `diagnostics proxy-metrics`: a proxy's raw /metrics through the API server's pod proxy. */
export async function getProxyMetrics(
  kube: VizKube,
  namespace: string,
  pod: string,
  adminPort = 4191,
): Promise<string> {
  const p = await getPod(kube, namespace, pod);
  if (!hasProxy(p))
    throw new VizError(
      'MINIMESH_VIZ_NOT_MESHED',
      `pod ${namespace}/${pod} has no minimesh-proxy container: it is not meshed`,
    );
  let res: { status: number; body: unknown };
  try {
    res = await kube.request('GET', podProxyPath(namespace, pod, adminPort, '/metrics'), undefined, {
      timeoutMs: 15_000,
      accept: 'text/plain',
    });
  } catch (err) {
    throw new VizError(
      'MINIMESH_VIZ_UNREACHABLE',
      `pod ${namespace}/${pod}: the API server: ${(err as Error).message}`,
      { cause: err },
    );
  }
  if (res.status !== 200)
    throw new VizError(
      'MINIMESH_VIZ_UNREACHABLE',
      `pod ${namespace}/${pod}: the proxy's admin port ${adminPort} answered HTTP ${res.status}: ${statusMessageOf(res.body) ?? String(res.body).split('\n')[0]}`,
    );
  return typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
}

export interface TapRequest {
  resource: Resource;
  namespace: string;
  to?: Resource;
  method?: string;
  path?: string;
  authority?: string;
  /** Requests per proxy before its stream ends. */
  limit: number;
  headers?: boolean;
}

/** The tap service's query string for a tap request (what /tap takes). */
export function toTapQuery(req: TapRequest): string {
  const q = new URLSearchParams({ namespace: req.namespace, kind: req.resource.kind, limit: String(req.limit) });
  if (req.resource.name) q.set('name', req.resource.name);
  if (req.to) {
    q.set('toKind', req.to.kind);
    if (req.to.name) q.set('toName', req.to.name);
    q.set('toNamespace', req.to.namespace || req.namespace);
  }
  if (req.method) q.set('method', req.method);
  if (req.path) q.set('path', req.path);
  if (req.authority) q.set('authority', req.authority);
  if (req.headers) q.set('headers', 'true');
  return q.toString();
}

/**
 * Streams a tap from the tap service (through the API server's service proxy): each record to
 * onRecord, each per-pod problem to onWarning, until every proxy's limit is reached or the signal aborts.
 */
export async function streamTap(
  kube: VizKube,
  tapUrl: string,
  req: TapRequest,
  handlers: {
    onRecord: (r: TapRecord) => void;
    onWarning?: (message: string) => void;
    onStart?: (pods: string[]) => void;
  },
  signal?: AbortSignal,
): Promise<void> {
  await requireResource(kube, { ...req.resource, namespace: req.namespace });
  if (req.to) await requireResource(kube, req.to);
  const svc = parseServiceUrl(tapUrl);
  if (!svc)
    throw new VizError(
      'MINIMESH_VIZ_NOT_INSTALLED',
      `the tap service URL "${tapUrl}" is not a Service of this cluster`,
    );
  const path = serviceProxyPath(svc.namespace, svc.service, svc.port, `/tap?${toTapQuery(req)}`);
  let failure: VizError | undefined;
  try {
    await kube.watch(
      path,
      {},
      (type, object) => {
        const o = object as { message?: string; pods?: string[]; fatal?: boolean; code?: string };
        if (type === 'ADDED') handlers.onRecord(object as TapRecord);
        else if (type === 'BOOKMARK') handlers.onStart?.(o.pods ?? []);
        else if (type === 'ERROR') {
          if (o.fatal)
            failure = new VizError(
              o.code === 'MINIMESH_VIZ_NOT_MESHED' ? 'MINIMESH_VIZ_NOT_MESHED' : 'MINIMESH_VIZ_TAP_REFUSED',
              o.message ?? 'tap failed',
            );
          else handlers.onWarning?.(o.message ?? 'tap: a proxy failed');
        }
      },
      signal ? { signal } : {},
    );
  } catch (err) {
    const e = err as { statusCode?: number; detail?: string; message: string };
    const msg = e.detail ?? e.message;
    if (e.statusCode === 404 || e.statusCode === 400)
      throw new VizError(e.statusCode === 404 ? 'MINIMESH_VIZ_NOT_FOUND' : 'MINIMESH_VIZ_TAP_REFUSED', msg, {
        cause: err,
        exitCode: 2,
      });
    throw new VizError(
      'MINIMESH_VIZ_UNREACHABLE',
      `the tap service ${svc.namespace}/${svc.service}:${svc.port} (through the API server): ${msg}`,
      { cause: err },
    );
  }
  if (failure) throw failure;
}
