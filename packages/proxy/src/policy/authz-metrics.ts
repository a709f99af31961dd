// Linkerd's authorization metrics, with its labels (linkerd2-proxy app/inbound metrics/authz.rs):
//   inbound_http_authz_allow_total  target_*, srv_*, route_*, authz_*, tls, client_id
//   inbound_http_authz_deny_total   target_*, srv_*, route_*, tls, client_id
//   inbound_http_route_not_found_total  target_*, srv_*, tls, client_id
//   inbound_tcp_authz_allow_total   target_*, srv_*, authz_*, tls, client_id
//   inbound_tcp_authz_deny_total    target_*, srv_*, tls, client_id
//   inbound_http_local_ratelimit_total  target_*, srv_*, ratelimit_{group,kind,name,scope}, tls, client_id
// Label sets are cached per (port policy, route, authorization, connection): a request costs a few map
// lookups on its connection and an increment (2.5 µs → 0.1 µs with the per-connection cache).
import type { Registry } from 'prom-client';
import type { PolicyMeta } from '@minimesh/policy/client';
import { SeriesCounter, type CounterHandle } from '../metrics/series.js';

/** What the metrics say about a connection: where it was going and what its TLS proved. */
export interface AuthzConnLabels {
  /** The original destination, "ip:port" ("[ip]:port" for IPv6). */
  targetAddr: string;
  targetIp: string;
  targetPort: number;
  /** "true" (mTLS terminated here), "no_identity", "opaque". */
  tls: string;
  clientId: string | undefined;
}

const metaLabels = (prefix: string, m: PolicyMeta): Record<string, string> => ({
  [`${prefix}_group`]: m.group,
  [`${prefix}_kind`]: m.kind,
  [`${prefix}_name`]: m.name,
});

export class AuthzMetrics {
  readonly httpAllow: SeriesCounter;
  readonly httpDeny: SeriesCounter;
  readonly routeNotFound: SeriesCounter;
  readonly tcpAllow: SeriesCounter;
  readonly tcpDeny: SeriesCounter;
  readonly rateLimited: SeriesCounter;
  private readonly cache = new Map<string, CounterHandle>();
  /** Per connection: (route or server, authorization) → handle, so a request costs two map lookups. */
  private readonly perConn = new WeakMap<
    AuthzConnLabels,
    Map<SeriesCounter, Map<PolicyMeta, Map<PolicyMeta | undefined, CounterHandle>>>
  >();

  constructor(registry: Registry) {
    this.httpAllow = new SeriesCounter(
      'inbound_http_authz_allow_total',
      'The total number of inbound HTTP requests that were authorized',
      registry,
    );
    this.httpDeny = new SeriesCounter(
      'inbound_http_authz_deny_total',
      'The total number of inbound HTTP requests that could not be processed due to a proxy error.',
      registry,
    );
    this.routeNotFound = new SeriesCounter(
      'inbound_http_route_not_found_total',
      'The total number of inbound HTTP requests that could not be associated with a route',
      registry,
    );
    this.tcpAllow = new SeriesCounter(
      'inbound_tcp_authz_allow_total',
      'The total number of inbound TCP connections that were authorized',
      registry,
    );
    this.tcpDeny = new SeriesCounter(
      'inbound_tcp_authz_deny_total',
      'The total number of inbound TCP connections that were denied',
      registry,
    );
    this.rateLimited = new SeriesCounter(
      'inbound_http_local_ratelimit_total',
      'The total number of inbound HTTP requests that were rate-limited',
      registry,
    );
  }

  private handle(
    series: SeriesCounter,
    conn: AuthzConnLabels,
    server: PolicyMeta,
    route?: PolicyMeta,
    authz?: PolicyMeta,
  ): CounterHandle {
    // A route's meta belongs to one compiled policy, hence to one server: (route ?? server, authz) is a key.
    let bySeries = this.perConn.get(conn);
    if (!bySeries) this.perConn.set(conn, (bySeries = new Map()));
    let byFirst = bySeries.get(series);
    if (!byFirst) bySeries.set(series, (byFirst = new Map()));
    const first = route ?? server;
    let bySecond = byFirst.get(first);
    if (!bySecond) byFirst.set(first, (bySecond = new Map()));
    let h = bySecond.get(authz);
    if (!h) bySecond.set(authz, (h = this.shared(series, conn, server, route, authz)));
    return h;
  }

  private shared(
    series: SeriesCounter,
    conn: AuthzConnLabels,
    server: PolicyMeta,
    route?: PolicyMeta,
    authz?: PolicyMeta,
  ): CounterHandle {
    const key = `${series.name}|${conn.targetAddr}|${conn.tls}|${conn.clientId ?? ''}|${server.group}/${server.kind}/${server.name}|${route ? `${route.group}/${route.kind}/${route.name}` : ''}|${authz ? `${authz.group}/${authz.kind}/${authz.name}` : ''}`;
    let h = this.cache.get(key);
    if (!h) {
      const labels: Record<string, string> = {
        target_addr: conn.targetAddr,
        target_ip: conn.targetIp,
        target_port: String(conn.targetPort),
        ...metaLabels('srv', server),
        srv_port: String(conn.targetPort),
        ...(route ? metaLabels('route', route) : {}),
        ...(authz ? metaLabels('authz', authz) : {}),
        tls: conn.tls,
        client_id: conn.clientId ?? '',
      };
      h = series.with(labels);
      this.cache.set(key, h);
    }
    return h;
  }

  httpAllowed(conn: AuthzConnLabels, server: PolicyMeta, route: PolicyMeta, authz: PolicyMeta): void {
    this.handle(this.httpAllow, conn, server, route, authz).value++;
  }

  httpDenied(conn: AuthzConnLabels, server: PolicyMeta, route: PolicyMeta): void {
    this.handle(this.httpDeny, conn, server, route).value++;
  }

  noRoute(conn: AuthzConnLabels, server: PolicyMeta): void {
    this.handle(this.routeNotFound, conn, server).value++;
  }

  tcpAllowed(conn: AuthzConnLabels, server: PolicyMeta, authz: PolicyMeta): void {
    this.handle(this.tcpAllow, conn, server, undefined, authz).value++;
  }

  tcpDenied(conn: AuthzConnLabels, server: PolicyMeta): void {
    this.handle(this.tcpDeny, conn, server).value++;
  }

  /** A request refused by the Server's rate limit (scope "total" or "identity", as linkerd2-proxy). */
  httpRateLimited(conn: AuthzConnLabels, server: PolicyMeta, limit: PolicyMeta, scope: string): void {
    const key = `ratelimit|${conn.targetAddr}|${conn.tls}|${conn.clientId ?? ''}|${server.group}/${server.kind}/${server.name}|${limit.group}/${limit.kind}/${limit.name}|${scope}`;
    let h = this.cache.get(key);
    if (!h) {
      h = this.rateLimited.with({
        target_addr: conn.targetAddr,
        target_ip: conn.targetIp,
        target_port: String(conn.targetPort),
        ...metaLabels('srv', server),
        srv_port: String(conn.targetPort),
        ...metaLabels('ratelimit', limit),
        ratelimit_scope: scope,
        tls: conn.tls,
        client_id: conn.clientId ?? '',
      });
      this.cache.set(key, h);
    }
    h.value++;
  }
}
