// Outbound TLS route: Sni<Accept> → Opaque<Accept> with the backend its route picked. The connection's
// SNI picks the route among the policy's TLS routes as linkerd2-proxy does (policy client routeTls:
// the most specific SNI match, exact over wildcard, longer over shorter; a route without SNIs — an
// EgressNetwork's tls-egress-allow / tls-egress-deny — matches every name, least specifically). Then:
//  - no route matches: refused (reset; MINIMESH_PROXY_ROUTE_NOT_FOUND), as linkerd2-proxy fails it
//    ("no route"), counted in no route's metrics;
//  - a Forbidden filter (a Deny EgressNetwork's default) or an Invalid one (a backendRef the controller
//    could not resolve), on the route or on the backend picked: refused before a byte reaches the
//    destination (egress-tcp.ts refuseRouted: reset, proxy_errors_total, and
//    outbound_tls_route_close_total{error="forbidden"|"invalid_backend"});
//  - a backend, picked by weight: a Forward address (an EgressNetwork backendRef: the original
//    destination) or a Balancer's Service, where discover-tcp.ts and the relay take it, the buffered
//    ClientHello written upstream first; counted in outbound_tls_route_open_total and, when it closes,
//    outbound_tls_route_close_total{error=""}. Labels: parent_*, route_*, hostname (the SNI).
import { routeTls } from '@minimesh/policy/client';
import type { Logger } from '@minimesh/runtime';
import type { Handler, Layer } from '../layers.js';
import type { TcpRouteStats, TlsRouteMetrics } from '../policy/tcp-route-metrics.js';
import { resetSocket } from '../respond.js';
import type { Accept, Opaque, Sni } from '../targets.js';
import { pickRouteBackend, refuseRouted, type RefusalCode } from './egress-tcp.js';

export interface TlsRouteOptions {
  /** outbound_tls_route_* (undefined: not counted). */
  metrics: Pick<TlsRouteMetrics, 'start'> | undefined;
  /** Counts a refused connection (proxy_errors_total). */
  error: (code: RefusalCode) => void;
  log: Logger;
  /** [0, 1): which backend a connection takes (a seam for tests). */
  random?: () => number;
}

const UNCOUNTED: TcpRouteStats = { close: () => undefined };

export function pushTlsRoute(opts: TlsRouteOptions): Layer<Handler<Opaque<Accept>>, Handler<Sni<Accept>>> {
  const { log } = opts;
  const random = opts.random ?? Math.random;
  return (next) => (t) => {
    const { policy, sni, socket } = t;
    const dst = t.parent.orig?.key ?? '';
    const route = routeTls(policy, sni);
    if (route === undefined) {
      opts.error('MINIMESH_PROXY_ROUTE_NOT_FOUND');
      log.debug(
        { dst, sni, parent: `${policy.meta.kind} ${policy.ref.namespace}/${policy.meta.name}` },
        'TLS connection refused: no TLS route matches its server name',
      );
      resetSocket(socket);
      return;
    }
    const stats = opts.metrics?.start(policy, route, sni) ?? UNCOUNTED;
    const picked = pickRouteBackend(route, random);
    if ('refused' in picked) return refuseRouted(socket, picked.refused, stats, opts, policy, route, dst, 'TLS', sni);
    socket.once('close', () => stats.close(''));
    return next({
      kind: 'opaque',
      parent: t.parent,
      socket,
      prefix: t.prefix,
      ...(picked.backend !== undefined ? { backend: picked.backend } : {}),
    });
  };
}
