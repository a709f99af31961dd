// The HTTP server stage of both directions: a connection detection found to be HTTP goes to the proxy's
// HTTP/1 server or Node's HTTP/2 server (http/handoff.ts), and each request it parses, an exchange or an
// HTTP/1 Upgrade, goes down the request chain with the connection's target. The handoff is also what the
// inbound TLS stage gives its HTTP/2 sessions to, and what the drain closes.
import { HttpHandoff, type IncomingRequest } from '../http/handoff.js';
import type { ExchangeSink } from '../http/exchange.js';
import type { Layer, RequestHandler } from '../layers.js';

export interface HttpServerOptions {
  sink: ExchangeSink;
  /** The slowloris bound: an HTTP/1 request's headers must arrive within it. */
  headerReadTimeoutMs: number;
}

export function pushHttpServer<C>(opts: HttpServerOptions): Layer<RequestHandler<C, IncomingRequest>, HttpHandoff<C>> {
  return (next) => new HttpHandoff<C>(opts.sink, next, opts.headerReadTimeoutMs);
}
