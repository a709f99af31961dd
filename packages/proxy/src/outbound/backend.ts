// Outbound backend: RouteTarget → Concrete, the backend the request goes to. Today a route's one
// backend is its Service: the Logical's own Concrete. Weighted backendRefs (each its own Concrete, each
// balanced on its own) are picked here.
import type { Layer, Rejectable, RequestHandler } from '../layers.js';
import type { Concrete, RouteTarget } from '../targets.js';

export function pushBackend<R extends Rejectable>(): Layer<
  RequestHandler<Concrete, R>,
  RequestHandler<RouteTarget, R>
> {
  return (next) => (target, req) => next(target.logical.concrete, req);
}
