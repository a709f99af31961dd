// The outbound stack: accept → detect → discover → balance → connect (→ tls) for every connection the
// app opens. HTTP is served by node:http / node:http2 servers fed the already-accepted socket.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2Session, IncomingHttpHeaders as H2Headers, ServerHttp2Stream } from 'node:http2';
import type { Server, Socket } from 'node:net';
import type { ProxyConfig } from '../config.js';
import type { DestinationResolver } from '../destination/resolver.js';
import { keyOf } from '../destination/resolver.js';
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
import { ORIG_PROTO_HEADER, ORIG_PROTO_HTTP11 } from '../http/headers.js';
import { HttpHandoff } from '../http/handoff.js';
import { h1ToH1, h1ToH2, h2ToH2, type ExchangeHooks } from '../http/forward.js';
import type { Logger } from '@minimesh/runtime';
import { portInRanges } from '@minimesh/config';
import { toLabels, trackSocket, type Labels, type ProxyMetrics } from '../metrics/metrics.js';
import type { TlsCredentials } from '../tls/credentials.js';
import { createOutboundAccept, type OriginalDstFn, type OutboundAccept } from './accept.js';
import { pickEndpoint, type Pick } from './balance.js';
import { OutboundConnector } from './connect.js';
import { detectOutbound } from './detect.js';
import { discoverHttp, discoverTcp, type Target } from './discover.js';

export interface OutboundStackOptions {
  config: ProxyConfig;
  resolver: DestinationResolver;
  creds: TlsCredentials;
  metrics: ProxyMetrics;
  logger: Logger;
  /** Test/bench seam: how to learn the original destination (default: SO_ORIGINAL_DST). */
  originalDst?: OriginalDstFn;
}

interface ConnCtx {
  orig: { ip: string; port: number } | undefined;
}

export interface OutboundStack {
  server: Server;
  connector: OutboundConnector;
  /** Stops accepting, lets in-flight exchanges finish for up to graceMs, then closes everything. */
  drain(graceMs: number): Promise<void>;
}

export function createOutboundStack(opts: OutboundStackOptions): OutboundStack {
  const { config, resolver, creds, metrics } = opts;
  const log = opts.logger.child({ component: 'outbound' });
  const connector = new OutboundConnector(creds, config.outboundConnectTimeoutMs);
  const http = new HttpHandoff<ConnCtx>();
  const { h1, h2 } = http;
  const sockets = new Set<Socket>();
  const labelCache = new Map<string, Labels>();

  function endpointLabels(authority: string, pick: Pick): Labels {
    const ep = pick.endpoint;
    const addr = ep ? ep.key : keyOf(pick.ip, pick.port);
    const meshed = ep?.identity !== undefined && creds.context !== undefined;
    const key = `${authority}|${addr}|${meshed ? ep?.identity : ''}`;
    let l = labelCache.get(key);
    if (!l) {
      l = toLabels({
        direction: 'outbound',
        authority,
        targetAddr: addr,
        tls: meshed ? 'true' : 'no_identity',
        serverId: meshed ? ep?.identity : undefined,
        noTlsReason: ep ? (meshed ? undefined : 'not_provided_by_service_discovery') : 'no_endpoint',
        dst: ep?.labels,
      });
      l.authority = authority;
      if (labelCache.size > 10_000) labelCache.clear();
      labelCache.set(key, l);
    }
    return l;
  }

  h1.on('request', (req, res) => void handleH1(req, res));
  h1.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => void handleUpgrade(req, socket, head));
  h1.on('clientError', (_err, socket: Socket) => socket.destroy());

  h2.on('stream', (stream: ServerHttp2Stream, headers: H2Headers) => void handleH2(stream, headers));

  async function target(host: string | undefined, ctx: ConnCtx | undefined): Promise<Target> {
    const t = await discoverHttp(resolver, host, ctx?.orig, config.clusterDomain);
    if (!t)
      throw new ProxyError(
        'MINIMESH_PROXY_NO_ORIGINAL_DST',
        `request for ${host ?? '(no host)'}: no original destination and the authority is not a mesh service`,
      );
    return t;
  }

  function choose(t: Target): Pick {
    const p = pickEndpoint(t);
    if (!p) throw new ProxyError('MINIMESH_PROXY_NO_ENDPOINTS', `service ${t.authority}: no endpoints`);
    return p;
  }

  function hooksFor(labels: Labels, pick: Pick, onError: (err: Error) => void): ExchangeHooks {
    const rec = metrics.request(labels);
    const done = pick.endpoint?.load.start();
    let end: ((failed?: boolean) => void) | undefined;
    return {
      onResponse: (status, grpc) => {
        done?.();
        end = rec.response(status, grpc);
      },
      onEnd: (failed) => end?.(failed),
      onError: (err) => {
        done?.();
        metrics.error('outbound', errorCode(err));
        log.debug({ err: err.message }, 'outbound request failed');
        onError(err);
      },
    };
  }

  async function handleH1(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const ctx = http.contextOf(req.socket);
    const fail = (err: unknown) => {
      if (res.headersSent) return void res.destroy();
      const r = toHttpErrorResponse(err);
      res.writeHead(r.status, r.headers).end(r.body);
    };
    let t: Target;
    let pick: Pick;
    try {
      t = await target(req.headers.host, ctx);
      pick = choose(t);
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return fail(err);
    }
    const labels = endpointLabels(t.authority, pick);
    const ep = pick.endpoint;
    const hooks = hooksFor(labels, pick, fail);
    if (ep?.identity && creds.context) {
      const identity = ep.identity;
      const session = connector.meshedSession(ep.ip, ep.port, identity);
      h1ToH2(
        req,
        res,
        session,
        req.headers.host ?? t.authority,
        { [ORIG_PROTO_HEADER]: ORIG_PROTO_HTTP11 },
        hooks,
        (err) => toConnectError(ep.key, connector.meshed.lastError(session) ?? unwrapCause(err), identity),
      );
      return;
    }
    const ip = ep ? ep.ip : (pick as { ip: string }).ip;
    const port = ep ? ep.port : (pick as { port: number }).port;
    h1ToH1(req, res, { host: ip, port, agent: connector.agent }, hooks, (err) => toConnectError(keyOf(ip, port), err));
  }

  async function handleH2(stream: ServerHttp2Stream, headers: H2Headers): Promise<void> {
    const ctx = http.contextOfSession(stream.session as Http2Session);
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
    let t: Target;
    let pick: Pick;
    try {
      t = await target(headers[':authority'] ?? headers.host, ctx);
      pick = choose(t);
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return fail(err);
    }
    const labels = endpointLabels(t.authority, pick);
    const ep = pick.endpoint;
    const hooks = hooksFor(labels, pick, fail);
    if (ep?.identity && creds.context) {
      const identity = ep.identity;
      const session = connector.meshedSession(ep.ip, ep.port, identity);
      h2ToH2(stream, headers, session, {}, hooks, (err) =>
        toConnectError(ep.key, connector.meshed.lastError(session) ?? unwrapCause(err), identity),
      );
      return;
    }
    const ip = ep ? ep.ip : (pick as { ip: string }).ip;
    const port = ep ? ep.port : (pick as { port: number }).port;
    const session = connector.plainSession(ip, port);
    h2ToH2(stream, headers, session, {}, hooks, (err) =>
      toConnectError(keyOf(ip, port), connector.plainH2.lastError(session) ?? unwrapCause(err)),
    );
  }

  /** HTTP/1 Upgrade (WebSocket): replay the request to the endpoint, then relay raw bytes both ways. */
  async function handleUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    const ctx = http.contextOf(socket);
    const fail = (err: unknown) => {
      const r = toHttpErrorResponse(err);
      const lines = [
        `HTTP/1.1 ${r.status} Proxy Error`,
        ...Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`),
        `content-length: ${Buffer.byteLength(r.body)}`,
        '',
        r.body,
      ];
      socket.end(lines.join('\r\n'));
    };
    let t: Target;
    let pick: Pick;
    try {
      t = await target(req.headers.host, ctx);
      pick = choose(t);
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return fail(err);
    }
    const ep = pick.endpoint;
    const ip = ep ? ep.ip : (pick as { ip: string }).ip;
    const port = ep ? ep.port : (pick as { port: number }).port;
    const identity = creds.context ? ep?.identity : undefined;
    const labels = endpointLabels(t.authority, pick);
    const rec = metrics.request(labels);
    let upstream: Socket;
    try {
      upstream = connector.stream(ip, port, identity, []);
    } catch (err) {
      return fail(err);
    }
    const conn = metrics.connection({ ...tcpLabels(labels), peer: 'dst' });
    trackSocket(upstream, conn);
    let connected = false;
    upstream.once(identity ? 'secureConnect' : 'connect', () => {
      connected = true;
      const raw = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) raw.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(raw.join('\r\n') + '\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
      rec.response(101)();
    });
    upstream.on('error', (err) => {
      if (!connected) {
        metrics.error('outbound', errorCode(toConnectError(keyOf(ip, port), err, identity)));
        fail(toConnectError(keyOf(ip, port), err, identity));
      } else socket.destroy();
    });
    socket.on('error', () => upstream.destroy());
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
  }

  function tcpLabels(l: Labels): Labels {
    const { authority: _a, ...rest } = l;
    void _a;
    return rest;
  }

  /** Opaque TCP: discover by original destination, connect (mTLS when meshed), relay bytes. */
  async function handleTcp(socket: Socket, ctx: ConnCtx, prefix: Buffer): Promise<void> {
    const orig = ctx.orig;
    if (!orig) {
      metrics.error('outbound', 'MINIMESH_PROXY_NO_ORIGINAL_DST');
      return resetSocket(socket);
    }
    let pick: Pick;
    try {
      const t = await discoverTcp(resolver, orig);
      pick = choose(t);
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return resetSocket(socket);
    }
    const ep = pick.endpoint;
    const ip = ep ? ep.ip : (pick as { ip: string }).ip;
    const port = ep ? ep.port : (pick as { port: number }).port;
    const identity = creds.context ? ep?.identity : undefined;
    const labels = tcpLabels(endpointLabels(keyOf(orig.ip, orig.port), pick));
    let upstream: Socket;
    try {
      upstream = connector.stream(ip, port, identity, []);
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return resetSocket(socket);
    }
    const conn = metrics.connection({ ...labels, peer: 'dst' });
    trackSocket(upstream, conn);
    const done = ep?.load.start();
    let connected = false;
    upstream.once(identity ? 'secureConnect' : 'connect', () => {
      connected = true;
      done?.();
      if (prefix.length > 0) upstream.write(prefix);
      upstream.pipe(socket);
      socket.pipe(upstream);
      socket.resume();
    });
    upstream.on('error', (err) => {
      if (!connected) {
        done?.();
        const e = toConnectError(keyOf(ip, port), err, identity);
        metrics.error('outbound', e.code);
        log.debug({ err: e.message }, 'outbound TCP connect failed');
      }
      resetSocket(socket);
    });
    socket.on('error', () => upstream.destroy());
    upstream.on('end', () => socket.end());
    socket.on('end', () => upstream.end());
    socket.on('close', () => upstream.destroy());
  }

  async function onAccept(a: OutboundAccept): Promise<void> {
    const { socket } = a;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const ctx: ConnCtx = { orig: a.orig };
    const conn = metrics.connection(
      toLabels({
        direction: 'outbound',
        targetAddr: a.orig ? keyOf(a.orig.ip, a.orig.port) : '',
        tls: 'no_identity',
        noTlsReason: 'loopback',
      }),
    );
    trackSocket(socket, { read: conn.read, write: conn.write, close: conn.close });
    // Like Linkerd, ask the profile first: a port destination marks opaque (a Service or pod annotation)
    // skips detection, so server-speaks-first protocols there see no delay either.
    let opaqueByProfile = false;
    if (a.orig && !portInRanges(a.orig.port, config.opaquePorts)) {
      socket.pause();
      opaqueByProfile = (await resolver.profile(a.orig.ip, a.orig.port))?.opaqueProtocol === true;
    }
    const { protocol, prefix, ended } = opaqueByProfile
      ? { protocol: 'opaque' as const, prefix: Buffer.alloc(0), ended: false }
      : await detectOutbound(socket, a.orig?.port, config.opaquePorts, config.detectTimeoutMs);
    if (ended && prefix.length === 0) return void socket.destroy();
    if (protocol === 'opaque') await handleTcp(socket, ctx, prefix);
    else http.dispatch(socket, protocol, prefix, ctx);
  }

  const server = createOutboundAccept(
    (a) =>
      void onAccept(a).catch((err: unknown) => {
        log.warn({ err }, 'outbound connection failed');
        a.socket.destroy();
      }),
    opts.originalDst,
  );

  return {
    server,
    connector,
    drain: (graceMs) =>
      drainConnections(
        { server, h1, serverSessions: http.sessions, sockets, release: () => connector.close() },
        graceMs,
      ),
  };
}
