// Inbound authorize: a request on a connection → Authorized, when the port's policy (Server,
// AuthorizationPolicy, its routes) admits it (policy/inbound-authz.ts counts the decision in Linkerd's
// authz metrics). Refused: 403 (gRPC PERMISSION_DENIED), no route 404 (NOT_FOUND), an invalid policy
// 500 (INTERNAL), as linkerd2-proxy answers (respond.ts). The Authorized target carries the route's
// filters for the route stage. The port's rate limit is the next stage (rate-limit.ts).
import type { IncomingRequest } from '../http/handoff.js';
import type { Layer, RequestHandler } from '../layers.js';
import { authzConnOf, verdictError, type InboundAuthz } from '../policy/inbound-authz.js';
import type { Authorized, InboundConn } from '../targets.js';

const NO_FILTERS: Authorized['filters'] = [];

export function pushAuthorize(
  authz: InboundAuthz | undefined,
): Layer<RequestHandler<Authorized, IncomingRequest>, RequestHandler<InboundConn, IncomingRequest>> {
  return (next) => {
    // Without policies every request is admitted: one target per connection.
    const admitted = new WeakMap<InboundConn, Authorized>();
    const admit = (conn: InboundConn): Authorized => {
      let t = admitted.get(conn);
      if (t === undefined) admitted.set(conn, (t = { conn, filters: NO_FILTERS }));
      return t;
    };
    if (authz === undefined) return (conn, req) => next(admit(conn), req);
    return (conn, req) => {
      const headers = req.headers;
      const v = authz.checkRequest(authzConnOf(conn), {
        method: req.method,
        path: req.path,
        authority: req.authority,
        header: (n) => {
          const x = headers[n];
          return Array.isArray(x) ? x.join(',') : x;
        },
      });
      if (v.kind !== 'allow') return req.fail(verdictError(v));
      next({ conn, filters: v.filters }, req);
    };
  };
}
