// The HTTP server stage of both directions: a connection detection found to be HTTP goes to the proxy's
// HTTP/1 server or its HTTP/2 server (http/handoff.ts), and each request it parses, an exchange or an
// HTTP/1 Upgrade, goes down the request chain with the connection's target. The handoff is also what the
// inbound TLS stage gives its HTTP/2 sessions to, and what the drain closes.
import { CLIENT_IDLE_TIMEOUT_MS, HttpHandoff, type IncomingRequest } from '../http/handoff.js';
import type { H2Engine } from '../http/h2-engine.js';
import type { ExchangeSink } from '../http/exchange.js';
import type { Layer, RequestHandler } from '../layers.js';

export interface HttpServerOptions {
  sink: ExchangeSink;
  /** The slowloris bound: an HTTP/1 request's headers must arrive within it. */
  headerReadTimeoutMs: number;
  /** Which HTTP/2 server serves HTTP/2 callers (default the proxy's own). */
  h2Engine?: H2Engine;
}

export function pushHttpServer<C>(opts: HttpServerOptions): Layer<RequestHandler<C, IncomingRequest>, HttpHandoff<C>> {
  return (next) =>
    new HttpHandoff<C>(opts.sink, next, opts.headerReadTimeoutMs, CLIENT_IDLE_TIMEOUT_MS, opts.h2Engine ?? 'minimesh');
}
