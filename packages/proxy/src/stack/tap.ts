// The tap layer of both directions: while a tap is registered (src/tap/), a request about to be sent is
// offered to it with the labels the connect stage computed; a tapped exchange then reports its response
// to the tap. Without a tap server configured the layer is not in the chain at all; with one, a request
// costs one boolean read while nobody taps.
import type { HttpRequest } from '../http/exchange.js';
import type { Connected } from '../http/upstream.js';
import type { Layer, RequestHandler } from '../layers.js';
import { tapRequest } from '../tap/exchange-tap.js';
import type { TapLayer } from '../tap/tap.js';
import type { Direction } from '../targets.js';

export function pushTap<R extends HttpRequest>(opts: {
  tap: TapLayer | undefined;
  direction: Direction;
}): Layer<RequestHandler<Connected, R>, RequestHandler<Connected, R>> {
  const { tap, direction } = opts;
  return (next) => {
    if (tap === undefined) return next;
    return (t, req) => {
      const ex = req.observable;
      if (tap.active && ex !== undefined) ex.observe(tapRequest(tap, direction, ex, t.labels));
      next(t, req);
    };
  };
}
