// Outbound balance: Concrete → Balanced, the endpoint a request or connection goes to: P2C over
// peak-EWMA across a balanced set's ready endpoints (balance/), as linkerd2-proxy's balancer. Endpoint
// health (balance/endpoint-health.ts) says which are ready: one whose connection broke is left out while
// it reconnects. With failure accrual (balance/failure-accrual.ts: the Service's circuit breaking), an
// endpoint whose breaker is open is left out too, and a set whose every endpoint is ejected refuses the
// request at once (503). A set without endpoints refuses the request.
import type { EndpointHealth } from '../balance/endpoint-health.js';
import { ALL_EJECTED, type FailureAccrual } from '../balance/failure-accrual.js';
import { pickP2c } from '../balance/p2c-peak-ewma.js';
import { ProxyError } from '../errors.js';
import type { Layer, Rejectable, RequestHandler } from '../layers.js';
import type { Balanced, Concrete, Endpoint } from '../targets.js';

export function pushBalance<R extends Rejectable>(
  health: EndpointHealth,
  /** HTTP only: circuit breaking by the Services' failure accrual. */
  accrual?: FailureAccrual,
): Layer<RequestHandler<Balanced, R>, RequestHandler<Concrete, R>> {
  // One target per endpoint (and its Concrete): a request usually finds its own here.
  const targets = new WeakMap<Endpoint, Balanced>();
  const balanced = (concrete: Concrete, endpoint: Endpoint): Balanced => {
    let t = targets.get(endpoint);
    if (t === undefined || t.concrete !== concrete) targets.set(endpoint, (t = { concrete, endpoint }));
    return t;
  };
  return (next) => (concrete, req) => {
    if (concrete.kind !== 'balanced') return next(balanced(concrete, concrete.endpoint), req);
    const ep = accrual ? accrual.pick(concrete) : pickP2c(concrete.set.list, Math.random, health.ready);
    if (ep === ALL_EJECTED)
      return req.reject(
        new ProxyError(
          'MINIMESH_PROXY_NO_ENDPOINTS',
          `service ${concrete.authority}: every endpoint is ejected by failure accrual ` +
            `(circuit breaking); the next probe in ${accrual?.nextProbeInMs(concrete) ?? 0} ms`,
        ),
      );
    if (ep === undefined)
      return req.reject(new ProxyError('MINIMESH_PROXY_NO_ENDPOINTS', `service ${concrete.authority}: no endpoints`));
    next(balanced(concrete, ep), req);
  };
}
