// Outbound egress (opaque TCP): Opaque<Accept> → Opaque<Accept>. A connection whose original
// destination lies outside the cluster networks waits for its outbound policy (as the HTTP egress stage
// does, at most `waitMs`), then applies the policy's opaque route as linkerd2-proxy does: a route that
// forbids (a Deny EgressNetwork's tcp-egress-deny) or has no backend refuses the connection — it is
// reset before a byte reaches the destination, counted in proxy_errors_total
// (MINIMESH_PROXY_FORBIDDEN) and outbound_tcp_route_close_total{error="forbidden"}; any other route
// lets it go on to discovery and the relay, counted in outbound_tcp_route_open_total and, when it
// closes, outbound_tcp_route_close_total{error=""}. No controller, no answer in time, or no opaque
// route: the connection goes on as it always did.
import type { Logger } from '@minimesh/runtime';
import type { Handler, Layer } from '../layers.js';
import type { OutboundPolicies } from '../policy/outbound-policies.js';
import { resetSocket } from '../respond.js';
import type { Accept, Opaque } from '../targets.js';

export interface EgressTcpOptions {
  policies: Pick<OutboundPolicies, 'isEgress' | 'whenAnswered' | 'tcpRouteMetrics'> | undefined;
  waitMs: number;
  /** Counts a refused connection (proxy_errors_total). */
  error: (code: 'MINIMESH_PROXY_FORBIDDEN') => void;
  log: Logger;
}

export function pushEgressTcp(opts: EgressTcpOptions): Layer<Handler<Opaque<Accept>>, Handler<Opaque<Accept>>> {
  const { policies, waitMs, log } = opts;
  return (next) => {
    if (policies === undefined) return next;
    return async (t) => {
      const orig = t.parent.orig;
      if (orig === undefined || !policies.isEgress(orig.ip)) return next(t);
      const answer = policies.whenAnswered({ kind: 'addr', ip: orig.ip, port: orig.port }, waitMs);
      const policy = answer instanceof Promise ? await answer : answer;
      const route = policy?.opaque;
      if (policy === undefined || route === undefined) return next(t);
      const stats = policies.tcpRouteMetrics.start(policy, route, orig.ip, orig.port);
      if (route.refused) {
        stats.close(route.refused.error);
        opts.error('MINIMESH_PROXY_FORBIDDEN');
        log.debug(
          {
            dst: orig.key,
            parent: `${policy.meta.kind} ${policy.ref.namespace}/${policy.meta.name}`,
            route: route.meta.name,
          },
          `egress TCP connection refused: ${route.refused.message}`,
        );
        resetSocket(t.socket);
        return;
      }
      t.socket.once('close', () => stats.close(''));
      return next(t);
    };
  };
}
