// Server-side TLS for the inbound TLS stage (inbound/tls.ts): peek the ClientHello; terminate mTLS for
// our identity (TLS 1.3, a client certificate requested but optional, its identity learned from the DNS
// SAN after the chain is verified against the trust anchors).
import type { Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import { createSecureServer, type Http2Session } from 'node:http2';
import type { Logger } from '@minimesh/runtime';
import { peek } from '../detect/detect.js';
import { unshiftPrefix } from '../detect/socket-prefix.js';
import { H2_SETTINGS } from '../http/h2-pool.js';
import type { HttpHandoff } from '../http/handoff.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import type { InboundAccept, InboundConn } from '../targets.js';
import { parseClientHello } from './client-hello.js';
import { clientIdentity, mtlsServerOptions, type TlsCredentials } from './credentials.js';

export type InboundTls =
  { kind: 'terminate' } | { kind: 'passthrough'; sni: string | undefined } | { kind: 'plaintext' };

export async function peekTls(
  socket: Socket,
  localIdentity: string,
  timeoutMs: number,
): Promise<{ tls: InboundTls; prefix: Buffer; ended: boolean }> {
  const r = await peek(
    socket,
    (buf) => {
      const h = parseClientHello(buf);
      return h === 'more' ? 'more' : h;
    },
    timeoutMs,
    { kind: 'not-tls' } as const,
  );
  const h = r.result;
  if (h.kind === 'not-tls') return { tls: { kind: 'plaintext' }, prefix: r.prefix, ended: r.ended };
  if (h.sni === localIdentity) return { tls: { kind: 'terminate' }, prefix: r.prefix, ended: r.ended };
  return { tls: { kind: 'passthrough', sni: h.sni }, prefix: r.prefix, ended: r.ended };
}

export interface TlsTerminatorOptions {
  creds: TlsCredentials;
  metrics: ProxyMetrics;
  log: Logger;
  /** Where HTTP/2 over our mTLS (ALPN h2) goes: its sessions and streams. */
  http: HttpHandoff<InboundConn>;
  /** The handshake named the client: the connection's target, with its TLS and client identity. */
  onIdentified(conn: InboundConn, socket: TLSSocket): void;
  /** A terminated connection without ALPN h2: detection continues on the decrypted stream. */
  onDecrypted(conn: InboundConn, socket: TLSSocket): void;
}

/**
 * Terminates mTLS for our identity: TLS 1.3, a client certificate requested but optional. HTTP/2 (ALPN
 * h2) goes to the HTTP server's engine (the proxy's own; with node:http2, straight from its TLS server's
 * sessions); other connections come back decrypted.
 */
export function createTlsTerminator(opts: TlsTerminatorOptions): {
  terminate(accepted: InboundAccept, prefix: Buffer): void;
} {
  const { creds, metrics, http } = opts;
  // TLS sockets the server makes are matched to their connection by the peer address.
  const byPeer = new Map<string, InboundAccept>();
  // The target of each terminated connection, made once its handshake named the client.
  const conns = new WeakMap<TLSSocket, InboundConn>();
  const identify = (t: TLSSocket): InboundConn | undefined => {
    let conn = conns.get(t);
    if (conn !== undefined) return conn;
    const accepted = byPeer.get(`${t.remoteAddress}:${t.remotePort}`);
    if (accepted === undefined) return undefined;
    conn = {
      orig: accepted.orig,
      clientIp: accepted.clientIp,
      tls: 'true',
      clientId: clientIdentity(t, creds),
      sni: undefined,
    };
    conns.set(t, conn);
    opts.onIdentified(conn, t);
    return conn;
  };
  // A terminated connection without ALPN h2: detection goes on on the decrypted stream.
  const decrypted = (t: TLSSocket): void => {
    const conn = identify(t);
    if (!conn) return void t.destroy();
    opts.onDecrypted(conn, t);
  };
  let server: TlsServer;
  if (http.h2Engine === 'minimesh') {
    // ALPN as node:http2's secure server offers it: h2 only; a client without it is served decrypted.
    server = createTlsServer({ ...mtlsServerOptions(creds), ALPNProtocols: ['h2'] });
    server.on('secureConnection', (t: TLSSocket) => {
      if (t.alpnProtocol !== 'h2') return decrypted(t);
      const conn = identify(t);
      if (!conn) return void t.destroy();
      http.serveH2(t, undefined, conn);
    });
  } else {
    const h2 = createSecureServer({
      ...mtlsServerOptions(creds),
      peerMaxConcurrentStreams: 10_000,
      settings: H2_SETTINGS,
    });
    h2.on('session', (s: Http2Session) => http.adopt(s, identify(s.socket as TLSSocket)));
    h2.on('stream', (stream, headers) => http.stream(stream, headers));
    h2.on('unknownProtocol', decrypted);
    server = h2;
  }
  server.on('tlsClientError', (err: Error, t: TLSSocket) => {
    metrics.error('inbound', 'MINIMESH_PROXY_TLS_FAILED');
    opts.log.debug({ err: err.message }, 'inbound TLS handshake failed');
    t.destroy();
  });
  return {
    terminate(accepted, prefix) {
      const { socket } = accepted;
      const peer = `${socket.remoteAddress}:${socket.remotePort}`;
      byPeer.set(peer, accepted);
      socket.once('close', () => byPeer.delete(peer));
      unshiftPrefix(socket, prefix);
      server.emit('connection', socket);
    },
  };
}
