// Hands a detected connection to the proxy's HTTP/1 server (h1-server.ts) or its HTTP/2 server (src/h2;
// node:http2's with MINIMESH_PROXY_HTTP2_ENGINE=node) together
// with the proxy's target for that connection (original destination, TLS state, peer identity), and turns
// what those servers parse into requests for the stack: every request, whichever protocol, reaches `next(conn, request)` as an
// exchange (HTTP/1 or HTTP/2) or an HTTP/1 Upgrade. The HTTP server stage (stack/http-server.ts) of both
// directions is one of these.
import {
  createServer as createH2Server,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders as H2Headers,
} from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { prefixedDuplex } from '../detect/socket-prefix.js';
import type { Http } from '../targets.js';
import { H1Exchange, H2Exchange, type ExchangeSink, type HttpExchange } from './exchange.js';
import { UpgradeExchange } from './upgrade.js';
import { H1Server, type H1Reply, type H1Request } from './h1-server.js';
import { H2_SETTINGS, widenConnectionWindow } from './h2-pool.js';
import type { H2Engine, CallerSession, CallerStream } from './h2-engine.js';
import { serveHttp2 } from '../h2/index.js';
import { ProxyError } from '../errors.js';
import { isGrpc, respondBadRequest, respondH2 } from '../respond.js';

/** A request as the HTTP server hands it to the stack: an exchange, or an HTTP/1 Upgrade (WebSocket). */
export type IncomingRequest = HttpExchange | UpgradeExchange;

/**
 * How long an HTTP/1 client connection may sit idle between requests before the proxy closes it: an
 * hour, Envoy's default for downstream connections. A client pool reuses its idle connections without
 * knowing when the server will close them (Node's http.Agent ignores the server's `Keep-Alive:
 * timeout=` hint unless the agent has a timeout of its own), so every idle close by the proxy is a
 * chance that a request goes out on a connection that is closing, and the client sees `socket hang up`
 * for a request nobody read. With 60 s this lost 7 requests of a load app whose pool had grown in a
 * burst and was reused 60 s later in another (docs/reliability.md). The app, which owns the pool,
 * closes what it no longer needs; the hour bounds what a leaking client can hold.
 */
export const CLIENT_IDLE_TIMEOUT_MS = 3_600_000;

export class HttpHandoff<C> {
  /**
   * HTTP/1, fed connections that detection handed over. `headersTimeoutMs` is the slowloris bound: a
   * request whose headers are not complete in time gets 408 and the connection is closed.
   */
  readonly h1: H1Server;
  /** Plaintext HTTP/2 (and h2 on a stream we already decrypted) when node:http2 is the engine. */
  private nodeH2: Http2Server | undefined;
  /** Server-side HTTP/2 sessions: sent GOAWAY on drain so peers stop opening streams here. */
  readonly sessions = new Set<CallerSession>();
  private readonly bySocket = new WeakMap<object, C>();
  private readonly bySession = new WeakMap<object, C>();
  private readonly onStream = (stream: CallerStream, headers: H2Headers): void => this.stream(stream, headers);
  /** Set only while h2 handles a 'connection' event, which creates the session synchronously. */
  private pending: C | undefined;

  constructor(
    private readonly sink: ExchangeSink,
    /** Every request on a connection whose target is `conn`. */
    private readonly next: (conn: C, req: IncomingRequest) => void,
    headersTimeoutMs = 30_000,
    /** Idle time between two requests on an HTTP/1 client connection before the proxy closes it. */
    idleTimeoutMs = CLIENT_IDLE_TIMEOUT_MS,
    /** The HTTP/2 server's engine (the inbound TLS stage serves ALPN h2 with the same one). */
    readonly h2Engine: H2Engine = 'minimesh',
  ) {
    this.h1 = new H1Server(
      {
        request: (req: H1Request, res: H1Reply) => {
          const conn = this.bySocket.get(req.socket);
          if (conn === undefined) {
            this.sink.log.warn(
              `${this.sink.direction} HTTP/1 request on a connection the proxy no longer tracks: reset`,
            );
            return void res.destroy();
          }
          next(conn, new H1Exchange(req, res, sink));
        },
        upgrade: (req: H1Request, socket: Socket, head: Buffer) => {
          const conn = this.bySocket.get(socket);
          if (conn === undefined) return void socket.destroy();
          next(conn, new UpgradeExchange(req, socket, head, sink));
        },
        // A request that could not be read: 400, 431 or 408 (respond.ts); one behind an answer in progress
        // only closes the connection.
        clientError: respondBadRequest,
      },
      { headersTimeoutMs, idleTimeoutMs },
    );
  }

  /** node:http2's server, made on first use. */
  private get h2(): Http2Server {
    if (this.nodeH2 === undefined) {
      this.nodeH2 = createH2Server({ peerMaxConcurrentStreams: 10_000, settings: H2_SETTINGS });
      this.nodeH2.on('session', (s: Http2Session) => this.adopt(s, this.pending));
      this.nodeH2.on('stream', this.onStream);
    }
    return this.nodeH2;
  }

  /** HTTP/2 on `socket` with the proxy's engine (`prefix`: bytes already read of it), for connection `conn`. */
  serveH2(socket: Socket, prefix: Buffer | undefined, conn: C | undefined): void {
    const session = serveHttp2(socket, {}, this.onStream);
    this.adopt(session, conn);
    if (prefix !== undefined && prefix.length > 0) session.receive(prefix);
  }

  /** A stream of a server-side session, from h2 or another server (the inbound mTLS one). */
  stream(stream: CallerStream, headers: H2Headers): void {
    // A stream whose connection is reset (the peer killed) emits 'error': without a listener that is an
    // uncaught exception, which ends the proxy. The exchange sees the stream close and cleans up.
    stream.on('error', ignoreStreamError);
    const conn = stream.session === undefined ? undefined : this.bySession.get(stream.session);
    if (conn === undefined) return void stream.close(0x2);
    const disagreement = hostDisagreement(headers);
    if (disagreement !== undefined) {
      const err = new ProxyError('MINIMESH_PROXY_MALFORMED_REQUEST', disagreement);
      this.sink.metrics.error(this.sink.direction, err.code);
      this.sink.log.debug({ err: err.message }, `${this.sink.direction} HTTP/2 request refused`);
      return respondH2(stream, isGrpc(headers['content-type']), err);
    }
    this.next(conn, new H2Exchange(stream, headers, this.sink));
  }

  /** Every server-side HTTP/2 session, from h2 or another server (the inbound mTLS one), goes through here. */
  adopt(session: CallerSession, conn: C | undefined): void {
    this.sessions.add(session);
    session.once('close', () => this.sessions.delete(session));
    // node:http2 opens with the default connection window; the proxy's engine opens with its own.
    if (isNodeSession(session)) session.once('connect', () => widenConnectionWindow(session));
    if (conn !== undefined) this.bySession.set(session, conn);
    session.on('error', () => undefined);
  }

  /** Feeds a connection detected as HTTP to the matching server (giving back the bytes detection read). */
  serve(target: Http<C>): void {
    const { socket, prefix, parent } = target;
    if (target.protocol === 'http1') {
      this.bySocket.set(socket, parent);
      this.h1.serve(socket, prefix);
      return;
    }
    if (this.h2Engine === 'minimesh') return this.serveH2(socket, prefix, parent);
    const d: Duplex = prefixedDuplex(socket, prefix);
    this.pending = parent;
    this.h2.emit('connection', d);
    this.pending = undefined;
  }
}

function isNodeSession(s: CallerSession): s is Http2Session {
  return typeof (s as Partial<Http2Session>).setLocalWindowSize === 'function';
}

function ignoreStreamError(): void {
  // counted and logged where the exchange ends (its 'close'), not here
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
