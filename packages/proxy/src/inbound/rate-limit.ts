// Inbound rate limit: Authorized → Authorized, after authorization (as linkerd2-proxy checks the limit
// once a request is permitted): the port's HTTPLocalRateLimitPolicy (policy/local-rate-limit.ts, token
// buckets per Server, per client identity and per override) takes a token, or the request is answered
// 429 (gRPC RESOURCE_EXHAUSTED) with Retry-After, the connection kept. Counted in
// inbound_http_local_ratelimit_total. Without policies, or a port without a limit, it only passes on.
import { ProxyError } from '../errors.js';
import type { IncomingRequest } from '../http/handoff.js';
import type { Layer, RequestHandler } from '../layers.js';
import { authzConnOf, type InboundAuthz } from '../policy/inbound-authz.js';
import type { Authorized } from '../targets.js';

export function pushRateLimit(
  authz: Pick<InboundAuthz, 'checkRateLimit'> | undefined,
): Layer<RequestHandler<Authorized, IncomingRequest>, RequestHandler<Authorized, IncomingRequest>> {
  return (next) => {
    if (authz === undefined) return next;
    return (target, req) => {
      const refused = authz.checkRateLimit(authzConnOf(target.conn));
      if (refused === undefined) return next(target, req);
      req.fail(
        new ProxyError('MINIMESH_PROXY_RATE_LIMITED', refused.message, {
          retryAfterSeconds: Math.max(1, Math.ceil(refused.retryAfterMs / 1000)),
        }),
      );
    };
  };
}
