// The inbound stack, for every connection to the pod:
//   accept (original destination, loop check) → tls (terminate ours / pass others through / plaintext)
//   → detect → HTTP: per request forward to the app on 127.0.0.1:<original port> (connect → forward)
//            → opaque: relay to the app's port
// The authorization layer (src/policy/, when a policy is configured) sits between detect and forward:
// it sees the InboundConn (TLS, client identity, original destination) per connection and per request,
// and either hands on or answers (403, or a closed connection).
import type { IncomingMessage } from 'node:http';
import type { Server, Socket } from 'node:net';
import type { Logger } from '@minimesh/runtime';
import { portInRanges } from '@minimesh/config';
import type { ProxyConfig } from '../config/proxy.js';
import { drainConnections } from '../drain.js';
import { toConnectError, type ProxyError } from '../errors.js';
import type { ExchangeSink, HttpExchange } from '../http/exchange.js';
import { HttpHandoff } from '../http/handoff.js';
import { CLIENT_ID_HEADER, isMeshRequestHeader, requestHead } from '../http/headers.js';
import { LabelCache } from '../metrics/label-cache.js';
import { toLabels, trackSocket, type Labels, type ProxyMetrics } from '../metrics/metrics.js';
import { resetSocket, respondUpgrade } from '../respond.js';
import { createAccept, type OriginalDstFn } from '../stack/accept.js';
import { Connector } from '../transport/connector.js';
import { detectConnection } from '../stack/detect.js';
import { relay } from '../stack/relay.js';
import type { Accept, InboundConn, Opaque } from '../targets.js';
import type { TlsCredentials } from '../tls/credentials.js';
import type { InboundAuthz } from '../policy/inbound-authz.js';
import { authorizeExchange, authorizeUpgrade, authzConnOf, policyIsOpaque } from '../policy/inbound-layer.js';
import { admitInbound } from './accept.js';
import { clientIdHeaders, createAppEndpoints } from './forward.js';
import { createTlsTerminator, peekTls } from './tls.js';
import type { TapLayer } from '../tap/tap.js';

export interface InboundStackOptions {
  config: ProxyConfig;
  creds: TlsCredentials;
  metrics: ProxyMetrics;
  logger: Logger;
  /** Ports of this proxy: a connection whose original destination is one of them would loop. */
  proxyPorts: number[];
  /** Test/bench seam: how to learn the original destination (default: SO_ORIGINAL_DST). */
  originalDst?: OriginalDstFn;
  /** The tap layer (only when this proxy serves tap). */
  tap?: TapLayer | undefined;
  /** Authorization by the ports' policies; absent: everything is admitted. */
  authz?: InboundAuthz;
}

export interface InboundStack {
  server: Server;
  drain(graceMs: number): Promise<void>;
}

/** Short ClientHello wait on opaque ports, so an unmeshed server-speaks-first client is barely delayed. */
const OPAQUE_TLS_PEEK_MS = 300;

export function createInboundStack(opts: InboundStackOptions): InboundStack {
  const { config, creds, metrics, authz } = opts;
  const log = opts.logger.child({ component: 'inbound' });
  const sink: ExchangeSink = { direction: 'inbound', metrics, log, tap: opts.tap };
  const connector = new Connector(creds, config.inboundConnectTimeoutMs);
  const appEndpoint = createAppEndpoints();
  const labelCache = new LabelCache();
  const sockets = new Set<Socket>();
  const http = new HttpHandoff<InboundConn>(sink, { onRequest, onUpgrade }, config.headerReadTimeoutMs);
  const tls = createTlsTerminator({
    creds,
    metrics,
    log,
    http,
    // Labels are final once the handshake named the client: count the connection from here.
    onIdentified: (conn, t) => trackSocket(t, metrics.connection(labelsFor(conn, undefined))),
    onDecrypted: (conn, t) => void afterTls(conn, t, Buffer.alloc(0)),
  });

  // The last label set of each connection: its requests usually carry the same authority.
  const lastLabels = new WeakMap<InboundConn, { authority: string | undefined; tls: string; labels: Labels }>();

  function labelsFor(conn: InboundConn, authority: string | undefined): Labels {
    const last = lastLabels.get(conn);
    if (last !== undefined && last.authority === authority && last.tls === conn.tls) return last.labels;
    const labels = labelsForSlow(conn, authority);
    lastLabels.set(conn, { authority, tls: conn.tls, labels });
    return labels;
  }

  function labelsForSlow(conn: InboundConn, authority: string | undefined): Labels {
    const key = `${authority ?? ''}|${conn.orig.key}|${conn.tls}|${conn.clientId ?? ''}|${conn.sni ?? ''}`;
    return (
      labelCache.get(key) ??
      labelCache.put(
        key,
        toLabels({
          direction: 'inbound',
          authority: authority ?? '',
          targetAddr: conn.orig.key,
          tls: conn.tls,
          clientId: conn.clientId,
          sni: conn.sni,
          noTlsReason: 'no_tls_from_remote',
        }),
      )
    );
  }

  function onRequest(conn: InboundConn, ex: HttpExchange): void {
    if (authz && !authorizeExchange(authz, conn, ex)) return;
    const extra = clientIdHeaders(conn, ex);
    const ep = appEndpoint(conn);
    const up = connector.http(ep, ex.upgradedHttp1 ? 'http1' : ex.protocol);
    ex.forward(up, labelsFor(conn, ex.authority), extra);
  }

  /** HTTP/1 Upgrade (WebSocket): replay the request to the app, then relay raw bytes both ways. */
  function onUpgrade(conn: InboundConn, req: IncomingMessage, socket: Socket, head: Buffer): void {
    const denied = authz && authorizeUpgrade(authz, conn, req);
    if (denied) return respondUpgrade(socket, denied);
    const ep = appEndpoint(conn);
    const extra = conn.clientId ? { [CLIENT_ID_HEADER]: conn.clientId } : undefined;
    metrics.request(labelsFor(conn, req.headers.host));
    const first = requestHead(req, isMeshRequestHeader, extra);
    relay(socket, connector.stream(ep), {
      first: head.length > 0 ? Buffer.concat([first, head]) : first,
      onConnectError: (err) => respondUpgrade(socket, toConnectError(ep.key, err)),
    });
  }

  /** Opaque TCP (and TLS passed through): relay bytes to the app's port. */
  function onOpaque(target: Opaque<InboundConn>): void {
    const { socket, prefix } = target;
    if (authz && !authz.admitConnection(authzConnOf(target.parent))) return resetSocket(socket);
    const ep = appEndpoint(target.parent);
    relay(socket, connector.stream(ep), {
      first: prefix,
      onConnectError: (err) => {
        metrics.error('inbound', toConnectError(ep.key, err).code);
        resetSocket(socket);
      },
    });
  }

  async function afterTls(conn: InboundConn, socket: Socket, prefix: Buffer): Promise<void> {
    const detected = await detectConnection(conn, socket, {
      opaque:
        portInRanges(conn.orig.port, config.opaquePorts) ||
        (authz !== undefined && policyIsOpaque(authz, conn.orig.port)),
      prefix,
      timeoutMs: config.detectTimeoutMs,
    });
    if (!detected) return;
    if (detected.kind === 'opaque') onOpaque(detected);
    else http.serve(detected);
  }

  async function onAccept(a: Accept): Promise<void> {
    const { socket } = a;
    socket.on('error', () => undefined);
    let conn: InboundConn;
    try {
      conn = {
        orig: admitInbound(a, opts.proxyPorts),
        clientIp: socket.remoteAddress ?? '',
        tls: 'no_identity',
        clientId: undefined,
        sni: undefined,
      };
    } catch (err) {
      const e = err as ProxyError;
      metrics.error('inbound', e.code);
      if (e.code === 'MINIMESH_PROXY_LOOP') log.warn({ orig: a.orig }, e.message);
      else log.debug({ peer: socket.remoteAddress }, 'inbound connection without an original destination refused');
      return resetSocket(socket);
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const opaque =
      portInRanges(conn.orig.port, config.opaquePorts) ||
      (authz !== undefined && policyIsOpaque(authz, conn.orig.port));
    const peeked = await peekTls(
      socket,
      creds.localIdentity,
      opaque ? Math.min(OPAQUE_TLS_PEEK_MS, config.detectTimeoutMs) : config.detectTimeoutMs,
    );
    if (peeked.ended && peeked.prefix.length === 0) return void socket.destroy();
    if (peeked.tls.kind === 'terminate' && creds.context) return tls.terminate(conn, socket, peeked.prefix);
    if (peeked.tls.kind !== 'plaintext') {
      conn.tls = 'opaque';
      conn.sni = peeked.tls.kind === 'passthrough' ? peeked.tls.sni : creds.localIdentity;
      trackSocket(socket, metrics.connection(labelsFor(conn, undefined)));
      return onOpaque({ kind: 'opaque', parent: conn, socket, prefix: peeked.prefix });
    }
    trackSocket(socket, metrics.connection(labelsFor(conn, undefined)));
    await afterTls(conn, socket, peeked.prefix);
  }

  const server = createAccept(
    'inbound',
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
      drainConnections(
        { server, h1: http.h1, serverSessions: http.sessions, sockets, release: () => connector.close() },
        graceMs,
      ),
  };
}
