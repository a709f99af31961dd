// Forward, the last stage of both directions' request chains: the request goes where the connect stage
// said, through the one forwarder (http/forward.ts) for an exchange, the transport of a retry's attempt,
// or a relayed tunnel for an HTTP/1 Upgrade (http/upgrade.ts). Counting, load tracking and the route's
// request timeout come with it (http/exchange.ts).
import type { HttpRequest } from '../http/exchange.js';
import type { Connected } from '../http/upstream.js';
import type { RequestHandler } from '../layers.js';

export function forward<R extends HttpRequest>(): RequestHandler<Connected, R> {
  return (t, req) => req.forward(t);
}
