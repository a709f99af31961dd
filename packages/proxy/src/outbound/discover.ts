// Outbound discover: a request on an accepted connection → its Logical target (destination/discovery.ts):
// the Service its Host names, or what the original destination is. The common case, a Service whose
// endpoints destination has sent, goes on at once (no promise); a new name waits for destination's
// first answer. Nothing to send it to: the request is refused (counted, answered). The seam for egress:
// a name that is not the mesh's would be classified here.
import type { Discovery } from '../destination/discovery.js';
import type { IncomingRequest } from '../http/handoff.js';
import type { Layer, RequestHandler } from '../layers.js';
import type { Accept, Logical } from '../targets.js';

export function pushDiscover(
  discovery: Discovery,
): Layer<RequestHandler<Logical, IncomingRequest>, RequestHandler<Accept, IncomingRequest>> {
  return (next) => (conn, req) => {
    const known = discovery.httpNow(req.authority, conn.orig);
    if (known !== undefined) return next(known, req);
    discovery.http(req.authority, conn.orig).then(
      (logical) => next(logical, req),
      (err: unknown) => req.reject(err),
    );
  };
}
