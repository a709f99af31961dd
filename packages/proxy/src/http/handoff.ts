// Hands a detected connection to Node's HTTP/1 or HTTP/2 server together with the proxy's context for
// that connection (original destination, TLS state, peer identity), which the request handlers read
// back by socket (HTTP/1) or session (HTTP/2). Shared by the inbound and outbound stacks.
import { createServer as createH1Server, type Server as H1Server } from 'node:http';
import { createServer as createH2Server, type Http2Server, type Http2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { prefixedDuplex, unshiftPrefix } from '../detect/socket-prefix.js';
import { H2_SETTINGS, widenConnectionWindow } from './h2-pool.js';

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

  constructor() {
    this.h2.on('session', (s: Http2Session) => this.adopt(s, this.pending));
  }

  /** Every server-side HTTP/2 session, from h2 or another server (the inbound mTLS one), goes through here. */
  adopt(session: Http2Session, ctx: C | undefined): void {
    this.sessions.add(session);
    session.once('close', () => this.sessions.delete(session));
    session.once('connect', () => widenConnectionWindow(session));
    if (ctx !== undefined) this.bySession.set(session, ctx);
    session.on('error', () => undefined);
  }

  /** Feeds a connection whose first bytes (`prefix`) were read by detection to the matching server. */
  dispatch(socket: Socket, protocol: 'http1' | 'h2', prefix: Buffer, ctx: C): void {
    if (protocol === 'http1') {
      this.bySocket.set(socket, ctx);
      unshiftPrefix(socket, prefix);
      this.h1.emit('connection', socket);
      socket.resume();
      return;
    }
    const d: Duplex = prefixedDuplex(socket, prefix);
    this.pending = ctx;
    this.h2.emit('connection', d);
    this.pending = undefined;
  }

  contextOf(socket: object): C | undefined {
    return this.bySocket.get(socket);
  }

  contextOfSession(session: Http2Session): C | undefined {
    return this.bySession.get(session);
  }
}
