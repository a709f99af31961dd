// The inbound authorization layer: between detection and forwarding, it checks each connection that is
// not HTTP, and each HTTP request, against the port's policy (InboundPolicies), counts the decision in
// Linkerd's authz metrics, and says what to answer when it is not allowed: as linkerd2-proxy, a denied
// request gets 403 (gRPC PERMISSION_DENIED), a request no route matches 404 (gRPC NOT_FOUND), an
// invalid policy 500 (gRPC INTERNAL); a denied connection is closed.
import {
  authorizeConnection,
  authorizeRequest,
  ipToBigint,
  requestView,
  type ClientInfo,
  type CompiledRateLimit,
  type CompiledServerPolicy,
  type InboundRouteFilter,
} from '@minimesh/policy/client';
import type { Logger } from '@minimesh/runtime';
import { ProxyError } from '../errors.js';
import type { InboundConn } from '../targets.js';
import type { AuthzConnLabels, AuthzMetrics } from './authz-metrics.js';
import { LocalRateLimit, type RateLimited } from './local-rate-limit.js';
import type { InboundPolicies } from './inbound-policies.js';

/** The connection as authorization sees it. */
export interface AuthzConn extends AuthzConnLabels {
  /** The client's address (the socket's remote address). */
  clientIp: string;
}

export type RequestVerdict =
  | { kind: 'allow'; filters: readonly InboundRouteFilter[] }
  /** Answer instead of forwarding: HTTP status, the gRPC status for gRPC requests, and why. */
  | { kind: 'respond'; status: number; grpcStatus: number; message: string; location?: string };

export interface InboundAuthz {
  /** The policy of a port now. */
  policy(port: number): CompiledServerPolicy;
  /** Whether a connection that is not HTTP may go on (opaque, TLS passed through, undetected). */
  admitConnection(conn: AuthzConn): boolean;
  checkRequest(
    conn: AuthzConn,
    req: { method: string; path: string; authority: string | undefined; header(name: string): string | undefined },
  ): RequestVerdict;
  /**
   * Takes a token for an admitted HTTP request from the port's rate limit (HTTPLocalRateLimitPolicy),
   * or says which limit refused it (counted in inbound_http_local_ratelimit_total).
   */
  checkRateLimit(conn: AuthzConn): RateLimited | undefined;
}

const GRPC = { NOT_FOUND: 5, PERMISSION_DENIED: 7, INTERNAL: 13 } as const;

export function createInboundAuthz(opts: {
  policies: InboundPolicies;
  metrics: AuthzMetrics;
  logger: Logger;
}): InboundAuthz {
  const { policies, metrics } = opts;
  const log = opts.logger.child({ component: 'authz' });
  // What authorization knows of a connection's client, its address parsed once per connection.
  const clients = new WeakMap<AuthzConn, ClientInfo>();
  const client = (c: AuthzConn): ClientInfo => {
    let info = clients.get(c);
    if (!info) {
      info = { ip: c.clientIp, tls: c.tls === 'true', identity: c.clientId, parsedIp: ipToBigint(c.clientIp) };
      clients.set(c, info);
    }
    return info;
  };

  // One limiter per compiled rate limit: a policy update starts the buckets over, as linkerd2-proxy
  // builds its limiters from each update.
  const limiters = new WeakMap<CompiledRateLimit, LocalRateLimit>();

  return {
    policy: (port) => policies.get(port),

    checkRateLimit(conn) {
      const p = policies.get(conn.targetPort);
      const limit = p.rateLimit;
      if (limit === undefined) return undefined;
      const now = performance.now();
      let rl = limiters.get(limit);
      if (rl === undefined) limiters.set(limit, (rl = new LocalRateLimit(limit, now)));
      const refused = rl.check(conn.tls === 'true' ? conn.clientId : undefined, now);
      if (refused) metrics.httpRateLimited(conn, p.meta, rl.meta, refused.scope);
      return refused;
    },

    admitConnection(conn) {
      const p = policies.get(conn.targetPort);
      const authz = authorizeConnection(p, client(conn));
      if (authz) {
        metrics.tcpAllowed(conn, p.meta, authz.meta);
        return true;
      }
      metrics.tcpDenied(conn, p.meta);
      log.info(
        {
          server: `${p.meta.kind}/${p.meta.name}`,
          client: conn.clientIp,
          clientId: conn.clientId,
          tls: conn.tls,
          port: conn.targetPort,
        },
        'connection denied',
      );
      return false;
    },

    checkRequest(conn, req) {
      const p = policies.get(conn.targetPort);
      const d = authorizeRequest(p, client(conn), requestView(req.method, req.path, req.authority, req.header));
      switch (d.kind) {
        case 'allow':
          metrics.httpAllowed(conn, p.meta, d.route.meta, d.authz.meta);
          return { kind: 'allow', filters: d.rule.filters };
        case 'deny':
          metrics.httpDenied(conn, p.meta, d.route.meta);
          log.info(
            {
              server: `${p.meta.kind}/${p.meta.name}`,
              route: `${d.route.meta.kind}/${d.route.meta.name}`,
              client: conn.clientIp,
              clientId: conn.clientId,
              tls: conn.tls,
            },
            'request denied',
          );
          return {
            kind: 'respond',
            status: 403,
            grpcStatus: GRPC.PERMISSION_DENIED,
            message: `unauthorized request on route ${d.route.meta.name} of ${p.meta.kind} ${p.meta.name}`,
          };
        case 'no-route':
          metrics.noRoute(conn, p.meta);
          return { kind: 'respond', status: 404, grpcStatus: GRPC.NOT_FOUND, message: 'no route found for request' };
        case 'invalid':
          return {
            kind: 'respond',
            status: 500,
            grpcStatus: GRPC.INTERNAL,
            message: `invalid server policy: ${d.reason}`,
          };
      }
    },
  };
}

/**
 * Applies a route's filters to a request: header edits (add, set, remove) in place; a failure injection
 * or a redirect becomes the answer.
 */
export function applyRequestFilters(
  filters: readonly InboundRouteFilter[],
  req: { authority: string | undefined; path: string; headers: Record<string, string | string[] | undefined> },
): RequestVerdict | undefined {
  const headers = req.headers;
  for (const f of filters) {
    if (f.kind === 'requestHeaders') {
      for (const [k, v] of f.add) {
        const cur = headers[k];
        headers[k] = cur === undefined ? v : Array.isArray(cur) ? [...cur, v] : [cur, v];
      }
      for (const [k, v] of f.set) headers[k] = v;
      for (const k of f.remove) delete headers[k];
    } else if (f.kind === 'fail') {
      if (Math.random() < f.ratio)
        return { kind: 'respond', status: f.status, grpcStatus: GRPC.INTERNAL, message: f.message };
    } else {
      const r = f.redirect.value;
      const scheme = r.scheme?.type?.$case === 'registered' ? (r.scheme.type.value === 1 ? 'https' : 'http') : 'http';
      const [host = '', port] = (req.authority ?? '').split(':');
      const portPart = r.port ? `:${r.port}` : port && !r.host ? `:${port}` : '';
      const path = r.path?.replace?.$case === 'full' ? r.path.replace.value : req.path;
      if (r.path?.replace?.$case === 'prefix')
        return {
          kind: 'respond',
          status: 500,
          grpcStatus: GRPC.INTERNAL,
          message: 'prefix-replacing redirects are not supported inbound',
        };
      return {
        kind: 'respond',
        status: r.status || 301,
        grpcStatus: GRPC.INTERNAL,
        message: 'redirected',
        location: `${scheme}://${r.host || host}${portPart}${path}`,
      };
    }
  }
  return undefined;
}

const conns = new WeakMap<InboundConn, AuthzConn>();

/** The authorization view of a connection (made once per connection). */
export function authzConnOf(conn: InboundConn): AuthzConn {
  let a = conns.get(conn);
  if (!a) {
    a = {
      targetAddr: conn.orig.key,
      targetIp: conn.orig.ip,
      targetPort: conn.orig.port,
      tls: conn.tls,
      clientId: conn.clientId,
      clientIp: conn.clientIp,
    };
    conns.set(conn, a);
  }
  return a;
}

/** Whether the port's policy makes it opaque (or TLS): no protocol detection, connection-level authorization. */
export function policyIsOpaque(authz: InboundAuthz, port: number): boolean {
  const p = authz.policy(port).protocol;
  return p === 'opaque' || p === 'tls';
}

/** A verdict that refuses a request, as the proxy error that answers it (403, 404, else 500: respond.ts). */
export function verdictError(v: Extract<RequestVerdict, { kind: 'respond' }>): ProxyError {
  if (v.status === 403) return new ProxyError('MINIMESH_PROXY_UNAUTHORIZED', v.message);
  if (v.status === 404) return new ProxyError('MINIMESH_PROXY_ROUTE_NOT_FOUND', v.message);
  return new ProxyError('MINIMESH_PROXY_INVALID_POLICY', v.message);
}
