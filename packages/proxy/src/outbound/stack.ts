// The outbound stack, for every connection the app opens:
//   accept → detect (profile first) → HTTP: per request discover → balance → connect (→ tls) → forward
//                                   → opaque: discover → balance → connect (→ tls) → relay
// The route layer (per-route timeouts, injected failures and retries from OutboundPolicies) sits
// between discover and connect: it sees the Concrete target and the exchange; a request on a route
// with retries goes to the retry layer (src/policy/outbound-retry.ts), every other one on as it is.
import type { IncomingMessage } from 'node:http';
import type { Server, Socket } from 'node:net';
import type { Logger } from '@minimesh/runtime';
import type { ProxyConfig } from '../config/proxy.js';
import type { DestinationResolver } from '../destination/resolver.js';
import { drainConnections } from '../drain.js';
import { toConnectError } from '../errors.js';
import type { ExchangeSink, HttpExchange } from '../http/exchange.js';
import { HttpHandoff } from '../http/handoff.js';
import { sendWithRetries, type RetryPolicy } from '../http/retry.js';
import { requestHead } from '../http/headers.js';
import { LabelCache } from '../metrics/label-cache.js';
import { toLabels, trackSocket, type Labels, type ProxyMetrics } from '../metrics/metrics.js';
import { errorCode, resetSocket, respondUpgrade } from '../respond.js';
import { createAccept, type OriginalDstFn } from '../stack/accept.js';
import { Connector } from '../transport/connector.js';
import { relay } from '../stack/relay.js';
import type { Accept, Addr, Concrete, Endpoint, Opaque } from '../targets.js';
import type { OutboundPolicies } from '../policy/outbound-policies.js';
import { applyOutboundRoute } from '../policy/outbound-routes.js';
import type { TlsCredentials } from '../tls/credentials.js';
import { balance } from './balance.js';
import { createOutboundDetect } from './detect.js';
import { createDiscover } from './discover.js';
import type { TapLayer } from '../tap/tap.js';

export interface OutboundStackOptions {
  config: ProxyConfig;
  resolver: DestinationResolver;
  creds: TlsCredentials;
  metrics: ProxyMetrics;
  logger: Logger;
  /** Outbound policies (routes: timeouts, injected failures, retries); none: requests go without routes. */
  policies?: OutboundPolicies;
  /** Test/bench seam: how to learn the original destination (default: SO_ORIGINAL_DST). */
  originalDst?: OriginalDstFn;
  /** The tap layer (only when this proxy serves tap). */
  tap?: TapLayer | undefined;
}

export interface OutboundStack {
  server: Server;
  connector: Connector;
  /** Stops accepting, lets in-flight exchanges finish for up to graceMs, then closes everything. */
  drain(graceMs: number): Promise<void>;
}

export function createOutboundStack(opts: OutboundStackOptions): OutboundStack {
  const { config, resolver, metrics } = opts;
  const log = opts.logger.child({ component: 'outbound' });
  const sink: ExchangeSink = { direction: 'outbound', metrics, log, tap: opts.tap };
  const connector = new Connector(opts.creds, config.outboundConnectTimeoutMs);
  const detect = createOutboundDetect({
    resolver,
    opaquePorts: config.opaquePorts,
    timeoutMs: config.detectTimeoutMs,
  });
  const discover = createDiscover(resolver, config.clusterDomain);
  const labelCache = new LabelCache();
  const sockets = new Set<Socket>();
  const http = new HttpHandoff<Accept>(
    sink,
    { onRequest, onUpgrade: (conn, req, socket, head) => void onUpgrade(conn, req, socket, head) },
    config.headerReadTimeoutMs,
  );

  /** Labels of traffic to `ep` for `authority`: mTLS and server_id when we can originate it. */
  // The last label set each endpoint was used with: a request usually finds its labels here without
  // building a cache key.
  const lastLabels = new WeakMap<Endpoint, { authority: string; serverId: string | undefined; labels: Labels }>();

  function endpointLabels(authority: string, ep: Endpoint): Labels {
    const serverId = connector.meshIdentity(ep);
    const last = lastLabels.get(ep);
    if (last !== undefined && last.authority === authority && last.serverId === serverId) return last.labels;
    const labels = endpointLabelsSlow(authority, ep, serverId);
    lastLabels.set(ep, { authority, serverId, labels });
    return labels;
  }

  function endpointLabelsSlow(authority: string, ep: Endpoint, serverId: string | undefined): Labels {
    const key = `${authority}|${ep.key}|${serverId ?? ''}|${ep.discovered ? 'd' : ''}`;
    const cached = labelCache.get(key);
    if (cached) return cached;
    const l = toLabels({
      direction: 'outbound',
      authority,
      targetAddr: ep.key,
      tls: serverId !== undefined ? 'true' : 'no_identity',
      serverId,
      noTlsReason:
        serverId !== undefined ? undefined : ep.discovered ? 'not_provided_by_service_discovery' : 'no_endpoint',
      dst: ep.labels,
    });
    return labelCache.put(key, l);
  }

  /** Labels of an accepted connection (from the app, over loopback). */
  function acceptLabels(orig: Addr | undefined): Labels {
    const key = `accept|${orig?.key ?? ''}`;
    return (
      labelCache.get(key) ??
      labelCache.put(
        key,
        toLabels({ direction: 'outbound', targetAddr: orig?.key ?? '', tls: 'no_identity', noTlsReason: 'loopback' }),
      )
    );
  }

  /** discover → balance for an HTTP request (an Upgrade too); throws what the caller must be answered with. */
  async function route(conn: Accept, host: string | undefined): Promise<{ concrete: Concrete; ep: Endpoint }> {
    const concrete = await discover.http({ host, orig: conn.orig });
    return { concrete, ep: balance(concrete) };
  }

  function onRequest(conn: Accept, ex: HttpExchange): void {
    // Hot path: the service's endpoints are known, so no promise and no microtask hop.
    const known = discover.httpNow({ host: ex.authority, orig: conn.orig });
    if (known === undefined) return void onRequestDiscovering(conn, ex);
    let ep: Endpoint;
    try {
      ep = balance(known);
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return ex.fail(err);
    }
    send(conn, known, ep, ex);
  }

  async function onRequestDiscovering(conn: Accept, ex: HttpExchange): Promise<void> {
    let concrete: Concrete;
    let ep: Endpoint;
    try {
      ({ concrete, ep } = await route(conn, ex.authority));
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return ex.fail(err);
    }
    send(conn, concrete, ep, ex);
  }

  /** route (HTTPRoute rule: timeouts, injected failures, retries) → connect (+ tls) → forward. */
  function send(conn: Accept, concrete: Concrete, ep: Endpoint, ex: HttpExchange): void {
    const policies = opts.policies;
    if (policies) {
      const route = applyOutboundRoute(policies, ex, concrete.authority, conn.orig, config.clusterDomain);
      if (route === false) return;
      if (route !== true) return sendRetrying(concrete, ep, ex, route);
    }
    const up = connector.http(ep, ex.protocol);
    ex.forward(up, endpointLabels(concrete.authority, ep), undefined, concrete.authority);
  }

  /** A request on a route with retries: each retry is balanced again over the same Concrete target. */
  function sendRetrying(concrete: Concrete, ep: Endpoint, ex: HttpExchange, policy: RetryPolicy): void {
    const labels = endpointLabels(concrete.authority, ep);
    sendWithRetries(
      ex,
      policy,
      (attempt) => {
        let e: Endpoint;
        try {
          e = attempt.n === 1 ? ep : balance(concrete);
        } catch (err) {
          return attempt.reject(err);
        }
        attempt.forward(connector.http(e, ex.protocol), labels, undefined, concrete.authority);
      },
      log,
    );
  }

  /** HTTP/1 Upgrade (WebSocket): replay the request to the endpoint, then relay raw bytes both ways. */
  async function onUpgrade(conn: Accept, req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    let concrete: Concrete;
    let ep: Endpoint;
    try {
      ({ concrete, ep } = await route(conn, req.headers.host));
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return respondUpgrade(socket, err);
    }
    const labels = endpointLabels(concrete.authority, ep);
    const t0 = metrics.request(labels);
    const identity = connector.meshIdentity(ep);
    let up: Socket;
    try {
      up = connector.stream(ep);
    } catch (err) {
      return respondUpgrade(socket, err);
    }
    trackSocket(up, metrics.connection(labels, 'dst'));
    relay(socket, up, {
      first: head.length > 0 ? Buffer.concat([requestHead(req), head]) : requestHead(req),
      onConnect: () => metrics.response(labels, t0, 101, undefined, false),
      onConnectError: (err) => {
        const e = toConnectError(ep.key, err, identity);
        metrics.error('outbound', e.code);
        respondUpgrade(socket, e);
      },
    });
  }

  /** Opaque TCP: discover by original destination, connect (mTLS when meshed), relay bytes. */
  async function onOpaque(target: Opaque<Accept>): Promise<void> {
    const { socket, prefix } = target;
    const orig = target.parent.orig;
    if (!orig) {
      metrics.error('outbound', 'MINIMESH_PROXY_NO_ORIGINAL_DST');
      return resetSocket(socket);
    }
    let concrete: Concrete;
    let ep: Endpoint;
    try {
      concrete = await discover.tcp(orig);
      ep = balance(concrete);
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return resetSocket(socket);
    }
    const identity = connector.meshIdentity(ep);
    let up: Socket;
    try {
      up = connector.stream(ep);
    } catch (err) {
      metrics.error('outbound', errorCode(err));
      return resetSocket(socket);
    }
    trackSocket(up, metrics.connection(endpointLabels(orig.key, ep), 'dst'));
    const load = ep.load;
    const loadT0 = load?.start() ?? 0;
    relay(socket, up, {
      first: prefix,
      onConnect: () => load?.end(loadT0),
      onConnectError: (err) => {
        load?.end(loadT0);
        const e = toConnectError(ep.key, err, identity);
        metrics.error('outbound', e.code);
        log.debug({ err: e.message }, 'outbound TCP connect failed');
        resetSocket(socket);
      },
    });
  }

  async function onAccept(a: Accept): Promise<void> {
    const { socket } = a;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    trackSocket(socket, metrics.connection(acceptLabels(a.orig)));
    const detected = await detect(a);
    if (!detected) return;
    if (detected.kind === 'opaque') await onOpaque(detected);
    else http.serve(detected);
  }

  const server = createAccept(
    'outbound',
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
        { server, h1: http.h1, serverSessions: http.sessions, sockets, release: () => connector.close() },
        graceMs,
      ),
  };
}
