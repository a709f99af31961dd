// Hands a detected connection to Node's HTTP/1 or HTTP/2 server together with the proxy's target for
// that connection (original destination, TLS state, peer identity), and turns what those servers parse
// into exchanges for the stack: every request, whichever protocol, reaches `onRequest(conn, exchange)`.
// Shared by the inbound and outbound stacks.
import {
  createServer as createH1Server,
  type IncomingMessage,
  type Server as H1Server,
  type ServerResponse,
} from 'node:http';
import {
  createServer as createH2Server,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders as H2Headers,
  type ServerHttp2Stream,
} from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { prefixedDuplex, unshiftPrefix } from '../detect/socket-prefix.js';
import type { Http } from '../targets.js';
import { H1Exchange, H2Exchange, type ExchangeSink, type HttpExchange } from './exchange.js';
import { H2_SETTINGS, widenConnectionWindow } from './h2-pool.js';
import { ProxyError } from '../errors.js';
import { isGrpc, respondH2 } from '../respond.js';

export interface HttpHandlers<C> {
  /** One request on a connection whose target is `conn`. */
  onRequest(conn: C, exchange: HttpExchange): void;
  /** An HTTP/1 Upgrade (WebSocket): the socket is the caller's from here. */
  onUpgrade(conn: C, req: IncomingMessage, socket: Socket, head: Buffer): void;
}

/** How often Node's HTTP/1 server checks its connections' header deadlines: a fraction of the timeout. */
export function checkingIntervalFor(headersTimeoutMs: number): number {
  return Math.max(25, Math.min(1000, Math.floor(headersTimeoutMs / 4)));
}

export class HttpHandoff<C> {
  /**
   * HTTP/1, fed connections that detection handed over. `headersTimeout` is the slowloris bound: a
   * request whose headers are not complete in time gets 408 and the connection is closed. Node checks
   * it on a timer that `listen()` starts, and this server never listens (it only receives
   * 'connection' events): the constructor starts that timer itself (see below), or no header
   * deadline is ever enforced and a client sending a byte every few seconds holds the connection forever.
   */
  readonly h1: H1Server;
  /** Plaintext HTTP/2 (and h2 on a stream we already decrypted). */
  readonly h2: Http2Server = createH2Server({ peerMaxConcurrentStreams: 10_000, settings: H2_SETTINGS });
  /** Server-side HTTP/2 sessions: sent GOAWAY on drain so peers stop opening streams here. */
  readonly sessions = new Set<Http2Session>();
  private readonly bySocket = new WeakMap<object, C>();
  private readonly bySession = new WeakMap<Http2Session, C>();
  /** Set only while h2 handles a 'connection' event, which creates the session synchronously. */
  private pending: C | undefined;

  constructor(
    private readonly sink: ExchangeSink,
    private readonly handlers: HttpHandlers<C>,
    headersTimeoutMs = 30_000,
  ) {
    this.h1 = createH1Server({
      keepAlive: true,
      keepAliveTimeout: 60_000,
      requestTimeout: 0,
      headersTimeout: headersTimeoutMs,
      connectionsCheckingInterval: checkingIntervalFor(headersTimeoutMs),
    });
    // Node's http.Server starts its connection checks (headersTimeout, requestTimeout) on 'listening';
    // the interval is unref'd and cleared by close(). test/hostile.test.ts fails without this line.
    this.h1.emit('listening');
    this.h2.on('session', (s: Http2Session) => this.adopt(s, this.pending));
    this.h2.on('stream', (stream: ServerHttp2Stream, headers: H2Headers) => this.stream(stream, headers));
    this.h1.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const conn = this.bySocket.get(req.socket);
      if (conn === undefined) return void res.destroy();
      handlers.onRequest(conn, new H1Exchange(req, res, sink));
    });
    this.h1.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      const conn = this.bySocket.get(socket);
      if (conn === undefined) return void socket.destroy();
      handlers.onUpgrade(conn, req, socket, head);
    });
    this.h1.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => refuseBadRequest(err, socket));
  }

  /** A stream of a server-side session, from h2 or another server (the inbound mTLS one). */
  stream(stream: ServerHttp2Stream, headers: H2Headers): void {
    const conn = this.bySession.get(stream.session as Http2Session);
    if (conn === undefined) return void stream.close(0x2);
    const disagreement = hostDisagreement(headers);
    if (disagreement !== undefined) {
      const err = new ProxyError('MINIMESH_PROXY_MALFORMED_REQUEST', disagreement);
      this.sink.metrics.error(this.sink.direction, err.code);
      this.sink.log.debug({ err: err.message }, `${this.sink.direction} HTTP/2 request refused`);
      return respondH2(stream, isGrpc(headers['content-type']), err);
    }
    this.handlers.onRequest(conn, new H2Exchange(stream, headers, this.sink));
  }

  /** Every server-side HTTP/2 session, from h2 or another server (the inbound mTLS one), goes through here. */
  adopt(session: Http2Session, conn: C | undefined): void {
    this.sessions.add(session);
    session.once('close', () => this.sessions.delete(session));
    session.once('connect', () => widenConnectionWindow(session));
    if (conn !== undefined) this.bySession.set(session, conn);
    session.on('error', () => undefined);
  }

  /** Feeds a connection detected as HTTP to the matching server (giving back the bytes detection read). */
  serve(target: Http<C>): void {
    const { socket, prefix, parent } = target;
    if (target.protocol === 'http1') {
      this.bySocket.set(socket, parent);
      unshiftPrefix(socket, prefix);
      this.h1.emit('connection', socket);
      socket.resume();
      return;
    }
    const d: Duplex = prefixedDuplex(socket, prefix);
    this.pending = parent;
    this.h2.emit('connection', d);
    this.pending = undefined;
  }
}

/** The authority without case or the scheme's default port, for comparing host with :authority. */
function normalizeAuthority(value: string, scheme: string | undefined): string {
  const v = value.trim().toLowerCase();
  const defaultPort = scheme === 'https' ? ':443' : ':80';
  return v.endsWith(defaultPort) ? v.slice(0, -defaultPort.length) : v;
}

/**
 * Why an HTTP/2 request's `host` header and `:authority` name different targets, or undefined when they
 * agree (or one is absent). RFC 9113 §8.3.1: a server SHOULD treat such a request as malformed. The
 * proxy routes by :authority while an HTTP/1 app behind it would read Host, so forwarding it would let a
 * client be routed as one service and served as another: it is refused with 400.
 */
export function hostDisagreement(headers: H2Headers): string | undefined {
  const authority = headers[':authority'];
  const host = headers.host;
  if (typeof authority !== 'string' || host === undefined) return undefined;
  const scheme = headers[':scheme'];
  const hosts = Array.isArray(host) ? host : [host];
  for (const h of hosts) {
    if (normalizeAuthority(h, scheme) !== normalizeAuthority(authority, scheme)) {
      const q = (s: string) => JSON.stringify(s.slice(0, 100));
      return `HTTP/2 request: host ${q(h)} differs from :authority ${q(authority)} (RFC 9113 §8.3.1)`;
    }
  }
  return undefined;
}

/**
 * A request Node's strict HTTP/1 parser refused (smuggling shapes: Content-Length with
 * Transfer-Encoding, obs-fold, a bare CR, a pseudo-header; or headers over the size limit), or one
 * whose headers did not arrive within the header read timeout: answer 400, 431 or 408 and close, as Node does without a handler, instead of a silent
 * reset. Nothing was forwarded. A socket in the middle of a response is only closed.
 */
export function refuseBadRequest(err: NodeJS.ErrnoException, socket: Socket): void {
  const busy = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || busy) return void socket.destroy();
  const status =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? '431 Request Header Fields Too Large'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? '408 Request Timeout'
        : '400 Bad Request';
  const reason =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? 'request headers not received within the header read timeout'
      : `invalid HTTP/1 request (${err.code ?? 'parse error'})`;
  socket.end(
    `HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\nx-minimesh-proxy-error: ${reason}\r\n\r\n`,
  );
  socket.destroySoon?.();
}
