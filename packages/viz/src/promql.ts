// PromQL for `minimesh viz stat` and `edges`, the queries Linkerd's metrics API runs, over the series
// minimesh-proxy exports (request_total, response_total, response_latency_ms, tcp_*) as scraped by the
// viz Prometheus (which adds namespace, pod, deployment, ... from Kubernetes service discovery). Pure.
import { parseDuration } from '@minimesh/config';
import { inboundLabel, outboundLabel, type Resource } from './resource.js';

export class QueryError extends Error {
  readonly code = 'MINIMESH_VIZ_BAD_QUERY';
}

/**
 * A Prometheus range duration as `--time-window` takes it: 30s, 1m, 10m, 1h, 1m30s, from 10 s to 24 h.
 * The value is @minimesh/config's parseDuration; the text also has to be a PromQL range in whole
 * seconds, minutes or hours (it goes into the query as it was written).
 */
export function parseWindow(text: string): { text: string; seconds: number } {
  let ms = NaN;
  try {
    if (/^(\d+[smh])+$/.test(text)) ms = parseDuration('--time-window', text);
  } catch {
    /* refused below */
  }
  if (!(ms >= 10_000 && ms <= 24 * 3_600_000))
    throw new QueryError(
      `time window "${text}" is not valid: expected a duration from 10s to 24h such as 30s, 1m or 1h`,
    );
  return { text, seconds: ms / 1000 };
}

/** A PromQL string literal. */
export function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** `{a="x", b=~".+"}` from ordered matchers; a value starting with `=~` is a regular-expression match. */
export function selector(matchers: ReadonlyArray<readonly [string, string]>): string {
  const parts = matchers.map(([k, v]) => (v.startsWith('=~') ? `${k}=~${quote(v.slice(2))}` : `${k}=${quote(v)}`));
  return `{${parts.join(', ')}}`;
}

export interface StatQuery {
  /** The rows: every resource of the kind (name empty) or one. */
  resource: Resource;
  /** The namespace of the rows; empty: every namespace. */
  namespace: string;
  /** Only traffic from this resource (measured by its outbound proxies). */
  from?: Resource;
  /** Only traffic to this resource (measured by the rows' outbound proxies). */
  to?: Resource;
  window: string;
}

/** Which labels of a result name its row, and the selector the queries share. */
export interface StatPlan {
  direction: 'inbound' | 'outbound';
  /** The label that holds the row's namespace, and the one that holds its name (same for namespaces). */
  namespaceLabel: string;
  nameLabel: string;
  matchers: Array<readonly [string, string]>;
  groupBy: string[];
}

/**
 * The selector: a workload's inbound series (what its pods served), or with --to the rows' outbound
 * series towards the target, or with --from the source's outbound series towards the rows (grouped by
 * the dst_ labels destination gave the source proxy).
 */
export function planStat(q: StatQuery): StatPlan {
  if (q.from && q.to) throw new QueryError('--from and --to cannot be used together');
  const kind = q.resource.kind;
  if (q.from) {
    const f = q.from;
    const nameLabel = outboundLabel(kind);
    const matchers: Array<readonly [string, string]> = [['direction', 'outbound']];
    if (f.namespace !== '') matchers.push(['namespace', f.namespace]);
    if (f.kind !== 'namespace' && f.name !== '') matchers.push([inboundLabel(f.kind), f.name]);
    if (f.kind === 'namespace' && f.name !== '') matchers.push(['namespace', f.name]);
    if (q.namespace !== '') matchers.push(['dst_namespace', q.namespace]);
    if (q.resource.name !== '') matchers.push([nameLabel, q.resource.name]);
    else if (kind !== 'namespace') matchers.push([nameLabel, '=~.+']);
    const groupBy = kind === 'namespace' ? ['dst_namespace'] : ['dst_namespace', nameLabel];
    return { direction: 'outbound', namespaceLabel: 'dst_namespace', nameLabel, matchers: dedupe(matchers), groupBy };
  }
  const nameLabel = inboundLabel(kind);
  const direction = q.to ? 'outbound' : 'inbound';
  const matchers: Array<readonly [string, string]> = [['direction', direction]];
  if (q.namespace !== '') matchers.push(['namespace', q.namespace]);
  if (q.resource.name !== '') matchers.push([nameLabel, q.resource.name]);
  else if (kind !== 'namespace') matchers.push([nameLabel, '=~.+']);
  if (q.to) {
    const t = q.to;
    if (t.namespace !== '') matchers.push(['dst_namespace', t.namespace]);
    if (t.kind === 'namespace' && t.name !== '') matchers.push(['dst_namespace', t.name]);
    else if (t.name !== '') matchers.push([outboundLabel(t.kind), t.name]);
  }
  const groupBy = kind === 'namespace' ? ['namespace'] : ['namespace', nameLabel];
  return { direction, namespaceLabel: 'namespace', nameLabel, matchers: dedupe(matchers), groupBy };
}

/** Later matchers on the same label win (a namespace given twice is the same namespace). */
function dedupe(m: Array<readonly [string, string]>): Array<readonly [string, string]> {
  const out = new Map<string, readonly [string, string]>();
  for (const x of m) out.set(x[0], x);
  return [...out.values()];
}

export interface StatQueries {
  /** response_total increase by classification and tls: success rate and RPS. */
  requests: string;
  p50: string;
  p95: string;
  p99: string;
  /** Open TCP connections: accepted ones for inbound (peer="src"), dialed ones for outbound (peer="dst"). */
  tcpConnections: string;
  readBytes: string;
  writeBytes: string;
}

export function statQueries(q: StatQuery): { plan: StatPlan; queries: StatQueries } {
  const w = parseWindow(q.window).text;
  const plan = planStat(q);
  const by = plan.groupBy.join(', ');
  const sel = selector(plan.matchers);
  const tcpSel = selector([...plan.matchers, ['peer', plan.direction === 'inbound' ? 'src' : 'dst']]);
  const quantile = (p: string) =>
    `histogram_quantile(${p}, sum(irate(response_latency_ms_bucket${sel}[${w}])) by (le, ${by}))`;
  return {
    plan,
    queries: {
      requests: `sum(increase(response_total${sel}[${w}])) by (${by}, classification, tls)`,
      p50: quantile('0.5'),
      p95: quantile('0.95'),
      p99: quantile('0.99'),
      tcpConnections: `sum(tcp_open_connections${tcpSel}) by (${by})`,
      readBytes: `sum(irate(tcp_read_bytes_total${tcpSel}[${w}])) by (${by})`,
      writeBytes: `sum(irate(tcp_write_bytes_total${tcpSel}[${w}])) by (${by})`,
    },
  };
}

export interface EdgeQuery {
  kind: Resource['kind'];
  /** Empty: every namespace. */
  namespace: string;
}

/**
 * Linkerd's edges queries: who each workload's proxies sent to (with the server identity the mTLS
 * handshake verified) and who they received from (with the client identity). An edge is reported by
 * its source's outbound series; with a namespace, edges from it and into it (two queries).
 */
export function edgeQueries(q: EdgeQuery): { outbound: string[]; inbound: string } {
  if (q.kind === 'namespace') throw new QueryError('edges are between workloads: give a kind such as deploy or po');
  const src = inboundLabel(q.kind);
  const dst = outboundLabel(q.kind);
  const base: Array<readonly [string, string]> = [
    ['direction', 'outbound'],
    [src, '=~.+'],
    [dst, '=~.+'],
  ];
  const by = `by (namespace, ${src}, dst_namespace, ${dst}, server_id, tls, no_tls_reason)`;
  const scopes: Array<Array<readonly [string, string]>> =
    q.namespace === ''
      ? [base]
      : [
          [...base, ['namespace', q.namespace]],
          [...base, ['dst_namespace', q.namespace]],
        ];
  const inb: Array<readonly [string, string]> = [['direction', 'inbound']];
  if (q.namespace !== '') inb.push(['namespace', q.namespace]);
  inb.push([src, '=~.+']);
  return {
    outbound: scopes.map((m) => `count(response_total${selector(m)}) ${by}`),
    inbound: `count(response_total${selector(inb)}) by (namespace, ${src}, client_id, tls, no_tls_reason)`,
  };
}

/** One request rate and the latency quantiles over time, for the dashboard's charts. */
export function historyQueries(q: StatQuery): {
  rps: string;
  successRate: string;
  p50: string;
  p95: string;
  p99: string;
} {
  const { plan, queries } = statQueries(q);
  const sel = selector(plan.matchers);
  const by = plan.groupBy.join(', ');
  const w = parseWindow(q.window).text;
  return {
    rps: `sum(rate(response_total${sel}[${w}])) by (${by})`,
    successRate: `sum(rate(response_total${selector([...plan.matchers, ['classification', 'success']])}[${w}])) by (${by}) / sum(rate(response_total${sel}[${w}])) by (${by})`,
    p50: queries.p50,
    p95: queries.p95,
    p99: queries.p99,
  };
}
