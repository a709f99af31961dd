// Outbound egress (opaque TCP): Opaque<Accept> → Opaque<Accept> (or, for TLS routes, TlsConn<Accept>).
// A connection whose original destination lies outside the cluster networks waits for its outbound
// policy (as the HTTP egress stage does, at most `waitMs`), then goes as linkerd2-proxy sends it:
//  - a policy of the tls protocol (TLSRoutes on the EgressNetwork) → the TLS stages, which route it by
//    its SNI (detect-sni.ts, tls-route.ts); an in-cluster address whose policy, once known, is of the
//    tls protocol goes there too (the first connections before the answer go on as opaque);
//  - otherwise the policy's opaque route: one that forbids (a Deny EgressNetwork's tcp-egress-deny) or
//    has no usable backend refuses the connection — reset before a byte reaches the destination,
//    counted in proxy_errors_total (MINIMESH_PROXY_FORBIDDEN, or _INVALID_POLICY for an Invalid filter)
//    and outbound_tcp_route_close_total{error="forbidden"|"invalid_backend"}; any other route picks a
//    backend by weight (linkerd2-proxy's RandomAvailable) — a Forward address (for an EgressNetwork
//    backendRef, the original destination) or a Balancer's Service — and lets the connection go on to
//    discovery and the relay, counted in outbound_tcp_route_open_total and, when it closes,
//    outbound_tcp_route_close_total{error=""}.
// No controller, no answer in time, or no opaque route: the connection goes on as it always did.
import type { CompiledOpaqueRoute, CompiledOutboundPolicy, CompiledRefusal } from '@minimesh/policy/client';
import type { Logger } from '@minimesh/runtime';
import type { Handler, Layer } from '../layers.js';
import type { OutboundPolicies } from '../policy/outbound-policies.js';
import type { TcpRouteStats } from '../policy/tcp-route-metrics.js';
import { resetSocket } from '../respond.js';
import type { Accept, Opaque, TlsConn } from '../targets.js';
import { pickWeighted } from './backend.js';

export type RefusalCode =
  'MINIMESH_PROXY_FORBIDDEN' | 'MINIMESH_PROXY_INVALID_POLICY' | 'MINIMESH_PROXY_ROUTE_NOT_FOUND';

export interface EgressTcpOptions {
  policies:
    | (Pick<OutboundPolicies, 'isEgress' | 'whenAnswered' | 'tcpRouteMetrics'> & Partial<Pick<OutboundPolicies, 'get'>>)
    | undefined;
  waitMs: number;
  /** Counts a refused connection (proxy_errors_total). */
  error: (code: RefusalCode) => void;
  log: Logger;
  /** [0, 1): which backend a connection takes (a seam for tests). */
  random?: () => number;
}

/** Where the egress stage hands a connection: on as opaque TCP, or to the TLS stages. */
export interface EgressTcpNext {
  opaque: Handler<Opaque<Accept>>;
  tls: Handler<TlsConn<Accept>>;
}

export function pushEgressTcp(opts: EgressTcpOptions): Layer<EgressTcpNext, Handler<Opaque<Accept>>> {
  const { policies, waitMs } = opts;
  const random = opts.random ?? Math.random;
  return (next) => {
    if (policies === undefined) return next.opaque;
    return async (t) => {
      const orig = t.parent.orig;
      if (orig === undefined) return next.opaque(t);
      const target = { kind: 'addr' as const, ip: orig.ip, port: orig.port };
      if (!policies.isEgress(orig.ip)) {
        const known = policies.get?.(target);
        if (known?.protocol === 'tls' && known.tls !== undefined)
          return next.tls({ parent: t.parent, socket: t.socket, prefix: t.prefix, policy: known });
        return next.opaque(t);
      }
      const answer = policies.whenAnswered(target, waitMs);
      const policy = answer instanceof Promise ? await answer : answer;
      if (policy === undefined) return next.opaque(t);
      if (policy.protocol === 'tls' && policy.tls !== undefined)
        return next.tls({ parent: t.parent, socket: t.socket, prefix: t.prefix, policy });
      const route = policy.opaque;
      if (route === undefined) return next.opaque(t);
      const stats = policies.tcpRouteMetrics.start(policy, route, orig.ip, orig.port);
      const picked = pickRouteBackend(route, random);
      if ('refused' in picked)
        return refuseRouted(t.socket, picked.refused, stats, opts, policy, route, orig.key, 'TCP');
      t.socket.once('close', () => stats.close(''));
      return next.opaque(picked.backend === undefined ? t : { ...t, backend: picked.backend });
    };
  };
}

/**
 * What a transport (opaque or TLS) route does with a connection: refuse it (a route filter, a backend
 * whose filter refuses, no backend with weight), or send it to a backend picked by weight (undefined:
 * the route has none of its own, the original destination's discovery serves).
 */
export function pickRouteBackend(
  route: CompiledOpaqueRoute,
  random: () => number,
): { refused: CompiledRefusal } | { backend: Opaque<Accept>['backend'] } {
  if (route.refused) return { refused: route.refused };
  const backends = route.backends ?? [];
  if (backends.length === 0) return { backend: undefined };
  const b = pickWeighted(backends, random());
  if (b === undefined)
    return { refused: { error: 'invalid_backend', message: `route ${route.meta.name}: every backend has weight 0` } };
  if (b.kind === 'refused') return { refused: b.refused };
  return { backend: b };
}

/**
 * Refuses a routed connection: counted (route close with its error, proxy_errors_total), logged (at
 * warn for an Invalid filter: the controller says the route is broken; at debug for a Forbidden one),
 * and reset before a byte reaches the destination.
 */
export function refuseRouted(
  socket: Opaque<Accept>['socket'],
  refused: CompiledRefusal,
  stats: TcpRouteStats,
  opts: { error: (code: RefusalCode) => void; log: Logger },
  policy: CompiledOutboundPolicy,
  route: CompiledOpaqueRoute,
  dst: string,
  what: 'TCP' | 'TLS',
  sni?: string,
): void {
  stats.close(refused.error);
  opts.error(refused.error === 'forbidden' ? 'MINIMESH_PROXY_FORBIDDEN' : 'MINIMESH_PROXY_INVALID_POLICY');
  const fields = {
    dst,
    parent: `${policy.meta.kind} ${policy.ref.namespace}/${policy.meta.name}`,
    route: route.meta.name,
    ...(sni !== undefined ? { sni } : {}),
  };
  if (refused.error === 'forbidden') opts.log.debug(fields, `egress ${what} connection refused: ${refused.message}`);
  else opts.log.warn(fields, `${what} connection refused, invalid route backend: ${refused.message}`);
  resetSocket(socket);
}
