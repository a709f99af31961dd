// `minimesh viz authz`: a workload's inbound traffic per Server, route and authorization — what its
// policy allowed, refused (UNAUTHORIZED) and rate limited — as `linkerd viz authz` shows it, from the
// proxies' authorization metrics (linkerd2-proxy's names and labels, docs/viz.md):
//   inbound_http_authz_allow_total{srv_*, route_*, authz_*}      allowed requests
//   inbound_http_authz_deny_total{srv_*, route_*}                refused (403 / PERMISSION_DENIED)
//   inbound_http_local_ratelimit_total{srv_*, ratelimit_*}       refused by an HTTPLocalRateLimitPolicy (429)
// Linkerd's table also has success rate and latency per authorization, from its response metrics'
// authorization labels, which minimesh-proxy's response metrics do not carry. Queries, the join into
// rows and the table are pure.
import type { Sample } from './prometheus.js';
import { quote } from './promql.js';
import { inboundLabel, type ResourceKind } from './resource.js';
import { formatRps, renderTable, type Column } from './table.js';

export interface AuthzQuery {
  kind: ResourceKind;
  namespace: string;
  name: string;
  window: string;
}

/** One row: a Server (and route) with the authorization that allowed its requests, or none. */
export interface AuthzRow {
  /** The Server's name (`default/<policy>` for a port no Server selects), as Linkerd's table names it. */
  server: string;
  route: string;
  /** "<kind>/<name>" of what allowed the requests; "" on a row of refusals only. */
  authorization: string;
  /** HTTPLocalRateLimitPolicy that limited them ("" when none did). */
  rateLimit: string;
  allowed: number;
  unauthorized: number;
  rateLimited: number;
  /** Per second over the window. */
  allowedRps: number;
  unauthorizedRps: number;
  rateLimitedRps: number;
}

const SRV_BY = 'srv_group, srv_kind, srv_name';
const ROUTE_BY = 'route_group, route_kind, route_name';

function selector(q: AuthzQuery): string {
  const parts = [`namespace=${quote(q.namespace)}`];
  if (q.kind !== 'namespace') parts.push(`${inboundLabel(q.kind)}=${quote(q.name)}`);
  return `{${parts.join(', ')}}`;
}

export function authzQueries(q: AuthzQuery): Record<'allow' | 'deny' | 'rateLimited', string> {
  const sel = selector(q);
  const inc = (metric: string, by: string) => `sum by (${by}) (increase(${metric}${sel}[${q.window}]))`;
  return {
    allow: inc('inbound_http_authz_allow_total', `${SRV_BY}, ${ROUTE_BY}, authz_group, authz_kind, authz_name`),
    deny: inc('inbound_http_authz_deny_total', `${SRV_BY}, ${ROUTE_BY}`),
    rateLimited: inc(
      'inbound_http_local_ratelimit_total',
      `${SRV_BY}, ratelimit_group, ratelimit_kind, ratelimit_name, ratelimit_scope`,
    ),
  };
}

const l = (s: Sample, k: string): string => s.metric[k] ?? '';
const named = (kind: string, name: string): string => (name === '' ? '' : `${kind || 'default'}/${name}`);

/** Rows from the answers of authzQueries: one per server, route and authorization, sorted. */
export function toAuthzRows(
  results: Partial<Record<'allow' | 'deny' | 'rateLimited', Sample[]>>,
  windowSeconds: number,
): AuthzRow[] {
  const rows = new Map<string, AuthzRow>();
  const row = (server: string, route: string, authorization: string, rateLimit: string): AuthzRow => {
    const key = [server, route, authorization, rateLimit].join('|');
    let r = rows.get(key);
    if (r === undefined)
      rows.set(
        key,
        (r = {
          server,
          route,
          authorization,
          rateLimit,
          allowed: 0,
          unauthorized: 0,
          rateLimited: 0,
          allowedRps: 0,
          unauthorizedRps: 0,
          rateLimitedRps: 0,
        }),
      );
    return r;
  };
  const server = (s: Sample) => (l(s, 'srv_kind') === 'default' ? `default/${l(s, 'srv_name')}` : l(s, 'srv_name'));
  const route = (s: Sample) => l(s, 'route_name') || 'default';
  for (const s of results.allow ?? [])
    row(server(s), route(s), named(l(s, 'authz_kind'), l(s, 'authz_name')), '').allowed += s.value;
  for (const s of results.deny ?? []) row(server(s), route(s), '', '').unauthorized += s.value;
  // A rate limit applies to the Server before its routes: its row has no route.
  for (const s of results.rateLimited ?? [])
    row(
      server(s),
      '',
      '',
      `${named(l(s, 'ratelimit_kind'), l(s, 'ratelimit_name'))} (${l(s, 'ratelimit_scope')})`,
    ).rateLimited += s.value;
  const out = [...rows.values()].filter((r) => r.allowed + r.unauthorized + r.rateLimited > 0);
  for (const r of out) {
    r.allowedRps = r.allowed / windowSeconds;
    r.unauthorizedRps = r.unauthorized / windowSeconds;
    r.rateLimitedRps = r.rateLimited / windowSeconds;
  }
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return out.sort(
    (a, b) =>
      cmp(a.server, b.server) ||
      cmp(a.route, b.route) ||
      cmp(a.authorization, b.authorization) ||
      cmp(a.rateLimit, b.rateLimit),
  );
}

const COLUMNS: Column[] = [
  { header: 'SERVER' },
  { header: 'ROUTE' },
  { header: 'AUTHORIZATION' },
  { header: 'RPS', align: 'right' },
  { header: 'UNAUTHORIZED', align: 'right' },
  { header: 'RATE_LIMITED', align: 'right' },
  { header: 'RATE_LIMIT' },
];

/** The table: RPS allowed, UNAUTHORIZED and RATE_LIMITED refused per second. */
export function renderAuthz(rows: readonly AuthzRow[]): string {
  return renderTable(
    COLUMNS,
    rows.map((r) => [
      r.server,
      r.route || '-',
      r.authorization || '-',
      formatRps(r.allowedRps),
      formatRps(r.unauthorizedRps),
      formatRps(r.rateLimitedRps),
      r.rateLimit || '-',
    ]),
  );
}
