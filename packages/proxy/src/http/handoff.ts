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

export interface HttpHandlers<C> {
  /** One request on a connection whose target is `conn`. */
  onRequest(conn: C, exchange: HttpExchange): void;
  /** An HTTP/1 Upgrade (WebSocket): the socket is the caller's from here. */
  onUpgrade(conn: C, req: IncomingMessage, socket: Socket, head: Buffer): void;
}

export class HttpHandoff<C> {
  readonly h1: H1Server = createH1Server({
    keepAlive: true,
    keepAliveTimeout: 60_000,
    requestTimeout: 0,
    headersTimeout: 60_000,
  });
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
  ) {
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

/**
 * A request Node's strict HTTP/1 parser refused (smuggling shapes: Content-Length with
 * Transfer-Encoding, obs-fold, a bare CR, a pseudo-header; or headers over the size limit): answer
 * 400 or 431 with the parser's reason and close, as Node does without a handler, instead of a silent
 * reset. Nothing was forwarded. A socket in the middle of a response is only closed.
 */
export function refuseBadRequest(err: NodeJS.ErrnoException, socket: Socket): void {
  const busy = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || busy) return void socket.destroy();
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
  const reason = `invalid HTTP/1 request (${err.code ?? 'parse error'})`;
  socket.end(
    `HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\nx-minimesh-proxy-error: ${reason}\r\n\r\n`,
  );
  socket.destroySoon?.();
}
