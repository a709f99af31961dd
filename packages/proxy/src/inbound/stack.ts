// The inbound stack: accept (original destination, loop check) → TLS (terminate ours / pass through
// others / plaintext) → detect → forward to the app on 127.0.0.1:<original port>.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createSecureServer,
  type Http2Session,
  type IncomingHttpHeaders as H2Headers,
  type ServerHttp2Stream,
} from 'node:http2';
import type { Server, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '@minimesh/runtime';
import type { ProxyConfig } from '../config.js';
import { keyOf } from '../destination/resolver.js';
import { unshiftPrefix } from '../detect/socket-prefix.js';
import {
  errorCode,
  isGrpc,
  resetSocket,
  toGrpcErrorHeaders,
  toH2ErrorHeaders,
  toHttpErrorResponse,
} from '../error-response.js';
import { ProxyError, toConnectError, unwrapCause } from '../errors.js';
import { drainConnections } from '../drain.js';
import { H2_SETTINGS } from '../http/h2-pool.js';
import { HttpHandoff } from '../http/handoff.js';
import { h1ToH1, h2ToH1, h2ToH2, type ExchangeHooks } from '../http/forward.js';
import { CLIENT_ID_HEADER, ORIG_PROTO_HEADER, ORIG_PROTO_HTTP11 } from '../http/headers.js';
import { toLabels, trackSocket, type Labels, type ProxyMetrics, type TlsLabel } from '../metrics/metrics.js';
import type { TlsCredentials } from '../tls/credentials.js';
import { createInboundAccept, isLoop, type InboundAccept } from './accept.js';
import type { OriginalDstFn } from '../outbound/accept.js';
import { detectInbound } from './detect.js';
import { APP_HOST, AppForwarder } from './forward.js';
import { clientIdentity, peekTls } from './tls.js';
import { portInRanges } from '@minimesh/config';

export interface InboundStackOptions {
  config: ProxyConfig;
  creds: TlsCredentials;
  metrics: ProxyMetrics;
  logger: Logger;
  /** Ports of this proxy: a connection whose original destination is one of them would loop. */
  proxyPorts: number[];
  /** Test/bench seam: how to learn the original destination (default: SO_ORIGINAL_DST). */
  originalDst?: OriginalDstFn;
}

interface ConnCtx {
  /** Original destination (the pod IP and the app's port). */
  orig: { ip: string; port: number };
  tls: TlsLabel;
  clientId: string | undefined;
  sni: string | undefined;
}

export interface InboundStack {
  server: Server;
  drain(graceMs: number): Promise<void>;
}

/** Short ClientHello wait on opaque ports, so an unmeshed server-speaks-first client is barely delayed. */
const OPAQUE_TLS_PEEK_MS = 300;

export function createInboundStack(opts: InboundStackOptions): InboundStack {
  const { config, creds, metrics } = opts;
  const log = opts.logger.child({ component: 'inbound' });
  const fwd = new AppForwarder(config.inboundConnectTimeoutMs);
  const ctxByPeer = new Map<string, ConnCtx>();
  const http = new HttpHandoff<ConnCtx>();
  const { h1 } = http;
  const sockets = new Set<Socket>();
  const labelCache = new Map<string, Labels>();

  function labelsFor(ctx: ConnCtx, authority: string | undefined): Labels {
    const key = `${authority ?? ''}|${ctx.orig.ip}:${ctx.orig.port}|${ctx.tls}|${ctx.clientId ?? ''}`;
    let l = labelCache.get(key);
    if (!l) {
      l = toLabels({
        direction: 'inbound',
        targetAddr: keyOf(ctx.orig.ip, ctx.orig.port),
        tls: ctx.tls,
        clientId: ctx.clientId,
        sni: ctx.sni,
        noTlsReason: 'no_tls_from_remote',
      });
      l.authority = authority ?? '';
      if (labelCache.size > 10_000) labelCache.clear();
      labelCache.set(key, l);
    }
    return l;
  }

  function hooks(labels: Labels, onError: (err: Error) => void): ExchangeHooks {
    const rec = metrics.request(labels);
    let end: ((failed?: boolean) => void) | undefined;
    return {
      onResponse: (status, grpc) => {
        end = rec.response(status, grpc);
      },
      onEnd: (failed) => end?.(failed),
      onError: (err) => {
        metrics.error('inbound', errorCode(err));
        log.debug({ err: err.message }, 'inbound request failed');
        onError(err);
      },
    };
  }

  // --- HTTP/1 (plaintext, or TLS without ALPN h2) ---
  h1.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const ctx = http.contextOf(req.socket);
    if (!ctx) return void res.destroy();
    delete req.headers[CLIENT_ID_HEADER];
    const fail = (err: unknown) => {
      if (res.headersSent) return void res.destroy();
      const r = toHttpErrorResponse(err);
      res.writeHead(r.status, r.headers).end(r.body);
    };
    const extra: Record<string, string> = ctx.clientId ? { [CLIENT_ID_HEADER]: ctx.clientId } : {};
    h1ToH1(
      req,
      res,
      { host: APP_HOST, port: ctx.orig.port, agent: fwd.agent, headers: extra },
      hooks(labelsFor(ctx, req.headers.host), fail),
      (err) => toConnectError(`${APP_HOST}:${ctx.orig.port}`, err),
    );
  });
  h1.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const ctx = http.contextOf(socket);
    if (!ctx) return void socket.destroy();
    const app = fwd.tcp(ctx.orig.port);
    metrics.request(labelsFor(ctx, req.headers.host));
    app.once('connect', () => {
      const raw = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        if ((req.rawHeaders[i] ?? '').toLowerCase() === CLIENT_ID_HEADER) continue;
        raw.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      }
      if (ctx.clientId) raw.push(`${CLIENT_ID_HEADER}: ${ctx.clientId}`);
      app.write(raw.join('\r\n') + '\r\n\r\n');
      if (head.length > 0) app.write(head);
      app.pipe(socket);
      socket.pipe(app);
    });
    app.on('error', (err) => {
      const r = toHttpErrorResponse(toConnectError(`${APP_HOST}:${ctx.orig.port}`, err));
      if (!socket.destroyed)
        socket.end(
          `HTTP/1.1 ${r.status} Proxy Error\r\n${Object.entries(r.headers)
            .map(([k, v]) => `${k}: ${v}`)
            .join('\r\n')}\r\ncontent-length: ${Buffer.byteLength(r.body)}\r\n\r\n${r.body}`,
        );
    });
    socket.on('error', () => app.destroy());
    socket.on('close', () => app.destroy());
    app.on('close', () => socket.destroy());
  });
  h1.on('clientError', (_e, socket: Socket) => socket.destroy());

  // --- HTTP/2 streams (h2 over our mTLS from peer proxies, or plaintext h2c) ---
  function onStream(stream: ServerHttp2Stream, headers: H2Headers): void {
    const ctx = http.contextOfSession(stream.session as Http2Session);
    if (!ctx) return void stream.close(0x2);
    const grpc = isGrpc(headers['content-type']);
    const fail = (err: unknown) => {
      if (stream.destroyed || stream.closed) return;
      if (stream.headersSent) return void stream.close(0x2);
      try {
        stream.respond(grpc ? toGrpcErrorHeaders(err) : toH2ErrorHeaders(err), { endStream: true });
      } catch {
        stream.destroy();
      }
    };
    delete headers[CLIENT_ID_HEADER];
    const extra: Record<string, string> = ctx.clientId ? { [CLIENT_ID_HEADER]: ctx.clientId } : {};
    const authority = headers[':authority'] ?? headers.host;
    const hk = hooks(labelsFor(ctx, authority), fail);
    const port = ctx.orig.port;
    if (headers[ORIG_PROTO_HEADER] === ORIG_PROTO_HTTP11) {
      h2ToH1(stream, headers, { host: APP_HOST, port, agent: fwd.agent, extra }, hk, (err) =>
        toConnectError(`${APP_HOST}:${port}`, err),
      );
      return;
    }
    const session = fwd.session(port);
    h2ToH2(stream, headers, session, extra, hk, (err) =>
      toConnectError(`${APP_HOST}:${port}`, fwd.h2.lastError(session) ?? unwrapCause(err)),
    );
  }
  http.h2.on('stream', onStream);

  // --- mTLS termination (our identity) ---
  const tlsServer = createSecureServer({
    SNICallback: (_name, cb) => cb(null, creds.context),
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.3',
    maxVersion: 'TLSv1.3',
    peerMaxConcurrentStreams: 10_000,
    settings: H2_SETTINGS,
  });
  const identify = (t: TLSSocket): ConnCtx | undefined => {
    const ctx = ctxByPeer.get(`${t.remoteAddress}:${t.remotePort}`);
    if (ctx && ctx.tls !== 'true') {
      ctx.tls = 'true';
      ctx.clientId = clientIdentity(t, creds);
      // Labels are final once the handshake named the client: count the connection from here.
      trackSocket(t, metrics.connection(tcpLabels(ctx)));
    }
    return ctx;
  };
  tlsServer.on('session', (s: Http2Session) => http.adopt(s, identify(s.socket as TLSSocket)));
  tlsServer.on('stream', onStream);
  tlsServer.on('tlsClientError', (err: Error, t: TLSSocket) => {
    metrics.error('inbound', 'MINIMESH_PROXY_TLS_FAILED');
    log.debug({ err: err.message }, 'inbound TLS handshake failed');
    t.destroy();
  });
  // Connections without ALPN h2: detect on the decrypted stream (HTTP/1, or opaque TCP).
  tlsServer.on('unknownProtocol', (t: TLSSocket) => {
    const ctx = identify(t);
    if (!ctx) return void t.destroy();
    void afterTls(t as unknown as Socket, ctx, Buffer.alloc(0));
  });

  async function afterTls(socket: Socket, ctx: ConnCtx, prefix: Buffer): Promise<void> {
    const {
      protocol,
      prefix: p2,
      ended,
    } = await detectInbound(socket, ctx.orig.port, config.opaquePorts, config.detectTimeoutMs, prefix);
    if (ended && p2.length === 0) return void socket.destroy();
    if (protocol === 'opaque') relay(socket, ctx, p2);
    else http.dispatch(socket, protocol, p2, ctx);
  }

  /** Opaque TCP (and TLS passed through): relay bytes to the app's port. */
  function relay(socket: Socket, ctx: ConnCtx, prefix: Buffer): void {
    const app = fwd.tcp(ctx.orig.port);
    let connected = false;
    app.once('connect', () => {
      connected = true;
      if (prefix.length > 0) app.write(prefix);
      app.pipe(socket);
      socket.pipe(app);
      socket.resume();
    });
    app.on('error', (err) => {
      if (!connected) metrics.error('inbound', toConnectError(`${APP_HOST}:${ctx.orig.port}`, err).code);
      resetSocket(socket);
    });
    socket.on('error', () => app.destroy());
    app.on('end', () => socket.end());
    socket.on('end', () => app.end());
    socket.on('close', () => app.destroy());
  }

  async function onAccept(a: InboundAccept): Promise<void> {
    const { socket, orig } = a;
    sockets.add(socket);
    socket.on('error', () => undefined);
    if (!orig) {
      metrics.error('inbound', 'MINIMESH_PROXY_NO_ORIGINAL_DST');
      log.debug({ peer: socket.remoteAddress }, 'inbound connection without an original destination refused');
      sockets.delete(socket);
      return resetSocket(socket);
    }
    if (isLoop(orig, opts.proxyPorts)) {
      metrics.error('inbound', 'MINIMESH_PROXY_LOOP');
      log.warn(
        { orig },
        new ProxyError(
          'MINIMESH_PROXY_LOOP',
          `inbound connection to ${keyOf(orig.ip, orig.port)} would loop into the proxy`,
        ).message,
      );
      sockets.delete(socket);
      return resetSocket(socket);
    }
    const peerKey = `${socket.remoteAddress}:${socket.remotePort}`;
    const ctx: ConnCtx = { orig, tls: 'no_identity', clientId: undefined, sni: undefined };
    socket.once('close', () => {
      sockets.delete(socket);
      ctxByPeer.delete(peerKey);
    });
    const opaque = portInRanges(orig.port, config.opaquePorts);
    const peeked = await peekTls(
      socket,
      creds.localIdentity,
      opaque ? Math.min(OPAQUE_TLS_PEEK_MS, config.detectTimeoutMs) : config.detectTimeoutMs,
    );
    if (peeked.ended && peeked.prefix.length === 0) return void socket.destroy();
    if (peeked.tls.kind === 'terminate' && creds.context) {
      ctxByPeer.set(peerKey, ctx);
      unshiftPrefix(socket, peeked.prefix);
      tlsServer.emit('connection', socket);
      return;
    }
    if (peeked.tls.kind === 'passthrough' || peeked.tls.kind === 'terminate') {
      ctx.tls = 'opaque';
      ctx.sni = peeked.tls.kind === 'passthrough' ? peeked.tls.sni : creds.localIdentity;
      trackSocket(socket, metrics.connection(tcpLabels(ctx)));
      return relay(socket, ctx, peeked.prefix);
    }
    trackSocket(socket, metrics.connection(tcpLabels(ctx)));
    await afterTls(socket, ctx, peeked.prefix);
  }

  function tcpLabels(ctx: ConnCtx): Labels {
    const { authority: _a, ...rest } = labelsFor(ctx, undefined);
    void _a;
    return { ...rest, peer: 'src' };
  }

  const server = createInboundAccept(
    (a) =>
      void onAccept(a).catch((err: unknown) => {
        log.warn({ err }, 'inbound connection failed');
        a.socket.destroy();
      }),
    opts.originalDst,
  );

  return {
    server,
    drain: (graceMs) =>
      drainConnections({ server, h1, serverSessions: http.sessions, sockets, release: () => fwd.close() }, graceMs),
  };
}
