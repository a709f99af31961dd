// `minimesh viz stat-outbound`: a workload's outbound traffic per Service (or EgressNetwork, for traffic
// leaving the cluster: "EgressNetwork/<name>:<port>"), route and backend, as
// `linkerd viz stat-outbound` prints it, from minimesh-proxy's route metrics (Linkerd's names:
// outbound_{http,grpc}_route_request_statuses_total and _request_duration_seconds per route,
// _backend_response_statuses_total and _backend_response_duration_seconds per backend,
// outbound_http_route_retry_requests_total) as the viz Prometheus scraped them (with the pods'
// namespace and workload labels). Opaque and TLS routes (TCPRoutes, TLSRoutes, an EgressNetwork's
// tcp-/tls-egress-* defaults) have no requests: their rows count connections (outbound_{tcp,tls}_route_
// open_total; a connection closed with an error, e.g. "forbidden", is a failure), which Linkerd's
// stat-outbound leaves out. Queries, the join into rows and the table are pure.
import type { Sample } from './prometheus.js';
import { quote } from './promql.js';
import { inboundLabel, type ResourceKind } from './resource.js';
import { formatMs, formatPercent, formatRps, renderTable, type Column } from './table.js';

export interface StatOutboundQuery {
  kind: ResourceKind;
  namespace: string;
  name: string;
  window: string;
}

/** One route of a Service (backend undefined) or one of its backends. */
export interface StatOutboundRow {
  service: string;
  route: string;
  routeKind: string;
  /** What `requests` counts: HTTP requests and gRPC calls, or the connections of an opaque or TLS route. */
  unit: 'requests' | 'connections';
  backend: string | undefined;
  requests: number;
  successes: number;
  rps: number | null;
  successRate: number | null;
  p50Ms: number | null;
  p95Ms: number | null;
  p99Ms: number | null;
  timeouts: number;
  retries: number;
  /**
   * A backend's balancer endpoints (outbound_http_balancer_endpoints): ready, and pending — among them
   * those failure accrual ejected. Undefined when the proxy exports none for it.
   */
  endpoints?: { ready: number; pending: number };
}

const ROUTE_BY = 'parent_kind, parent_namespace, parent_name, parent_port, route_kind, route_namespace, route_name';
const BACKEND_BY = `${ROUTE_BY}, backend_namespace, backend_name, backend_port`;
/** gRPC statuses counted as failures (the server's fault), as success rate means it. */
const GRPC_FAILURES = new Set(['UNKNOWN', 'DEADLINE_EXCEEDED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS']);

function workloadSelector(q: StatOutboundQuery, extra = ''): string {
  const label = q.kind === 'namespace' ? 'namespace' : inboundLabel(q.kind);
  const parts = [`namespace=${quote(q.namespace)}`];
  if (q.kind !== 'namespace') parts.push(`${label}=${quote(q.name)}`);
  if (extra) parts.push(extra);
  return `{${parts.join(', ')}}`;
}

/** The queries, per protocol family (http, grpc). */
export function statOutboundQueries(q: StatOutboundQuery): Record<string, string> {
  const sel = workloadSelector(q);
  const w = q.window;
  const out: Record<string, string> = {};
  for (const p of ['http', 'grpc']) {
    const status = p === 'http' ? 'http_status' : 'grpc_status';
    const f = `outbound_${p}_route`;
    out[`${p}Route`] = `sum by (${ROUTE_BY}, ${status}, error) (increase(${f}_request_statuses_total${sel}[${w}]))`;
    out[`${p}Backend`] =
      `sum by (${BACKEND_BY}, ${status}, error) (increase(${f}_backend_response_statuses_total${sel}[${w}]))`;
    for (const [k, v] of [
      ['p50', 0.5],
      ['p95', 0.95],
      ['p99', 0.99],
    ] as const) {
      out[`${p}Route${k}`] =
        `histogram_quantile(${v}, sum by (le, ${ROUTE_BY}) (rate(${f}_request_duration_seconds_bucket${sel}[${w}])))`;
      out[`${p}Backend${k}`] =
        `histogram_quantile(${v}, sum by (le, ${BACKEND_BY}) (rate(${f}_backend_response_duration_seconds_bucket${sel}[${w}])))`;
    }
  }
  out.retries = `sum by (${ROUTE_BY}) (increase(outbound_http_route_retry_requests_total${sel}[${w}]))`;
  out.endpoints = `sum by (backend_namespace, backend_name, backend_port, endpoint_state) (outbound_http_balancer_endpoints${sel})`;
  for (const p of ['tcp', 'tls']) {
    out[`${p}Open`] = `sum by (${ROUTE_BY}) (increase(outbound_${p}_route_open_total${sel}[${w}]))`;
    out[`${p}Failed`] =
      `sum by (${ROUTE_BY}) (increase(outbound_${p}_route_close_total${workloadSelector(q, 'error!=""')}[${w}]))`;
  }
  return out;
}

const m = (s: Sample, k: string): string => s.metric[k] ?? '';
const routeKey = (s: Sample): string =>
  [
    m(s, 'parent_kind'),
    m(s, 'parent_namespace'),
    m(s, 'parent_name'),
    m(s, 'parent_port'),
    m(s, 'route_kind'),
    m(s, 'route_namespace'),
    m(s, 'route_name'),
  ].join('|');
const backendKey = (s: Sample): string =>
  `${routeKey(s)}|${m(s, 'backend_namespace')}|${m(s, 'backend_name')}|${m(s, 'backend_port')}`;

function isSuccess(s: Sample, grpc: boolean): boolean {
  if (m(s, 'error') !== '') return false;
  if (grpc) return !GRPC_FAILURES.has(m(s, 'grpc_status') || 'UNKNOWN');
  const status = Number(m(s, 'http_status'));
  return status > 0 && status < 500;
}

const isTimeout = (s: Sample): boolean => /TIMEOUT/.test(m(s, 'error'));

/** Rows from the answers of statOutboundQueries (keys as it names them); routes sorted, backends under theirs. */
export function toStatOutboundRows(results: Record<string, Sample[]>, windowSeconds: number): StatOutboundRow[] {
  const rows = new Map<string, StatOutboundRow>();
  // A Service by its name; traffic leaving the cluster by its EgressNetwork, named as such.
  const service = (s: Sample) =>
    `${m(s, 'parent_kind') === 'EgressNetwork' ? 'EgressNetwork/' : ''}${m(s, 'parent_name')}:${m(s, 'parent_port')}`;
  const order = new Map<StatOutboundRow, [string, string]>();
  const row = (
    key: string,
    s: Sample,
    backend: string | undefined,
    unit: StatOutboundRow['unit'] = 'requests',
  ): StatOutboundRow => {
    let r = rows.get(key);
    if (r === undefined)
      rows.set(
        key,
        (r = {
          service: service(s),
          route: m(s, 'route_name') || 'default',
          routeKind: m(s, 'route_kind') || 'default',
          unit,
          backend,
          requests: 0,
          successes: 0,
          rps: null,
          successRate: null,
          p50Ms: null,
          p95Ms: null,
          p99Ms: null,
          timeouts: 0,
          retries: 0,
        }),
      );
    order.set(r, [routeKey(s), backend ?? '']);
    return r;
  };
  for (const p of ['http', 'grpc']) {
    const grpc = p === 'grpc';
    for (const s of results[`${p}Route`] ?? []) {
      const r = row(routeKey(s), s, undefined);
      r.requests += s.value;
      if (isSuccess(s, grpc)) r.successes += s.value;
      if (isTimeout(s)) r.timeouts += s.value;
    }
    for (const s of results[`${p}Backend`] ?? []) {
      const r = row(backendKey(s), s, m(s, 'backend_name') + (m(s, 'backend_port') ? `:${m(s, 'backend_port')}` : ''));
      r.requests += s.value;
      if (isSuccess(s, grpc)) r.successes += s.value;
      if (isTimeout(s)) r.timeouts += s.value;
    }
    for (const q of ['p50', 'p95', 'p99'] as const) {
      const field = `${q}Ms` as const;
      for (const s of results[`${p}Route${q}`] ?? []) {
        const r = rows.get(routeKey(s));
        if (r && Number.isFinite(s.value)) r[field] = s.value * 1000;
      }
      for (const s of results[`${p}Backend${q}`] ?? []) {
        const r = rows.get(backendKey(s));
        if (r && Number.isFinite(s.value)) r[field] = s.value * 1000;
      }
    }
  }
  for (const s of results.retries ?? []) {
    const r = rows.get(routeKey(s));
    if (r) r.retries += s.value;
  }
  // Each backend's balancer endpoints, ready and pending (the gauge names the backend's Service).
  const endpoints = new Map<string, { ready: number; pending: number }>();
  for (const s of results.endpoints ?? []) {
    const k = `${m(s, 'backend_namespace')}|${m(s, 'backend_name')}|${m(s, 'backend_port')}`;
    const e = endpoints.get(k) ?? { ready: 0, pending: 0 };
    if (m(s, 'endpoint_state') === 'ready') e.ready += s.value;
    else if (m(s, 'endpoint_state') === 'pending') e.pending += s.value;
    endpoints.set(k, e);
  }
  if (endpoints.size > 0)
    for (const [k, r] of rows) {
      if (r.backend === undefined) continue;
      const e = endpoints.get(k.split('|').slice(-3).join('|'));
      if (e) r.endpoints = { ...e };
    }
  // Opaque and TLS routes: connections opened, those closed with an error failed.
  for (const p of ['tcp', 'tls']) {
    const key = (s: Sample) => `${p}|${routeKey(s)}`;
    for (const s of results[`${p}Open`] ?? []) {
      const r = row(key(s), s, undefined, 'connections');
      r.requests += s.value;
      r.successes += s.value;
    }
    for (const s of results[`${p}Failed`] ?? []) {
      const r = row(key(s), s, undefined, 'connections');
      r.successes = Math.max(0, r.successes - s.value);
    }
  }
  for (const r of rows.values()) {
    r.rps = r.requests / windowSeconds;
    r.successRate = r.requests > 0 ? r.successes / r.requests : null;
  }
  // Each route, then its backends; routes by service and name.
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...rows.values()].sort((a, b) => {
    const [ra, ba] = order.get(a) as [string, string];
    const [rb, bb] = order.get(b) as [string, string];
    return cmp(ra, rb) || cmp(ba, bb);
  });
}

const COLUMNS: Column[] = [
  { header: 'SERVICE' },
  { header: 'ROUTE' },
  { header: 'TYPE' },
  { header: 'BACKEND' },
  { header: 'SUCCESS', align: 'right' },
  { header: 'RPS', align: 'right' },
  { header: 'LATENCY_P50', align: 'right' },
  { header: 'LATENCY_P95', align: 'right' },
  { header: 'LATENCY_P99', align: 'right' },
  { header: 'TIMEOUTS', align: 'right' },
  { header: 'RETRIES', align: 'right' },
];

/**
 * The table: a route's row, then one row per backend ("├─►" / "└─►"), as Linkerd draws them; when an
 * opaque or TLS route has a row, a CONN/S column holds its connections per second (its RPS "-"); when
 * the proxy exports balancer endpoints, READY shows a backend's ready endpoints of all ("2/3": one is
 * pending, e.g. ejected by failure accrual).
 */
export function renderStatOutbound(rows: readonly StatOutboundRow[]): string {
  const withConnections = rows.some((r) => r.unit === 'connections');
  const withEndpoints = rows.some((r) => r.endpoints !== undefined);
  const columns = [
    ...COLUMNS.slice(0, 6),
    ...(withConnections ? [{ header: 'CONN/S', align: 'right' } as Column] : []),
    ...COLUMNS.slice(6),
    ...(withEndpoints ? [{ header: 'READY', align: 'right' } as Column] : []),
  ];
  const cells = rows.map((r, i) => {
    const next = rows[i + 1];
    const last =
      next === undefined || next.backend === undefined || next.route !== r.route || next.service !== r.service;
    const conn = r.unit === 'connections';
    const figures = [
      formatPercent(r.successRate),
      conn ? '-' : formatRps(r.rps),
      ...(withConnections ? [conn ? formatRps(r.rps) : '-'] : []),
      formatMs(r.p50Ms),
      formatMs(r.p95Ms),
      formatMs(r.p99Ms),
      String(Math.round(r.timeouts)),
      r.backend === undefined ? String(Math.round(r.retries)) : '',
      ...(withEndpoints ? [r.endpoints ? `${r.endpoints.ready}/${r.endpoints.ready + r.endpoints.pending}` : ''] : []),
    ];
    if (r.backend === undefined) return [r.service, r.route, r.routeKind, '', ...figures];
    return ['', last ? '└─►' : '├─►', '', r.backend, ...figures];
  });
  return renderTable(columns, cells);
}

/** -o json|yaml: the rows as they are. */
export function toStatOutboundJson(rows: readonly StatOutboundRow[]): unknown {
  return rows.map((r) => ({ ...r }));
}
