// The outbound proxy (app → 127.0.0.1:4140 → mesh), as chains of stages, each read top-down in
// the order a request or connection meets them (layers.ts; docs/proxy.md draws the same path):
//   http         discover → egress → route → backend → balance → connect → tap → forward
//   opaque TCP   egress → discover → balance → relay
//   TLS routes   egress (the policy routes TLS by SNI) → detect SNI → TLS route → discover → balance → relay
//   connections  accept → detect → (HTTP server → http | opaque TCP)
import type { Server, Socket } from 'node:net';
import type { Logger } from '@minimesh/runtime';
import { EndpointHealth } from '../balance/endpoint-health.js';
import { FailureAccrual } from '../balance/failure-accrual.js';
import type { ProxyConfig } from '../config/proxy.js';
import { createDiscovery } from '../destination/discovery.js';
import type { DestinationResolver } from '../destination/resolver.js';
import { drainConnections } from '../drain.js';
import type { ExchangeSink } from '../http/exchange.js';
import { stack } from '../layers.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { OutboundLabels } from '../metrics/traffic-labels.js';
import type { OutboundPolicies } from '../policy/outbound-policies.js';
import { pushAccept, type OriginalDstFn } from '../stack/accept.js';
import { forward } from '../stack/forward.js';
import { pushHttpServer } from '../stack/http-server.js';
import { pushTap } from '../stack/tap.js';
import type { TapLayer } from '../tap/tap.js';
import type { Accept } from '../targets.js';
import { tcpStream } from '../tcp/stream.js';
import type { TlsCredentials } from '../tls/credentials.js';
import { Connector } from '../transport/connector.js';
import { pushBackend } from './backend.js';
import { pushBalance } from './balance.js';
import { pushConnect } from './connect.js';
import { pushDetectSni } from './detect-sni.js';
import { pushDetect } from './detect.js';
import { pushDiscoverTcp } from './discover-tcp.js';
import { pushDiscover } from './discover.js';
import { pushEgressTcp } from './egress-tcp.js';
import { pushEgress } from './egress.js';
import { relayTcp } from './relay.js';
import { pushRoute } from './route.js';
import { pushTlsRoute } from './tls-route.js';

export interface OutboundStackOptions {
  config: ProxyConfig;
  resolver: DestinationResolver;
  creds: TlsCredentials;
  metrics: ProxyMetrics;
  logger: Logger;
  /** Outbound policies (routes: timeouts, injected failures, retries); none: requests go without routes. */
  policies?: OutboundPolicies | undefined;
  /** Test/bench seam: how to learn the original destination (default: SO_ORIGINAL_DST). */
  originalDst?: OriginalDstFn | undefined;
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
  const { config, metrics } = opts;
  const log = opts.logger.child({ component: 'outbound' });
  const sink: ExchangeSink = { direction: 'outbound', metrics, log };
  const connector: Connector = new Connector(
    opts.creds,
    config.outboundConnectTimeoutMs,
    (ep) => health.broken(ep),
    new Set(config.inboundIps),
    config.h2Engine,
  );
  const health = new EndpointHealth((ep) => connector.reconnect(ep));
  const accrual = new FailureAccrual({
    lookup: (authority) => opts.policies?.get({ kind: 'authority', authority })?.failureAccrual,
    healthy: health.ready,
    log,
    registry: metrics.registry,
  });
  const discovery = createDiscovery(opts.resolver, config.clusterDomain);
  const labels = new OutboundLabels((ep) => connector.isLocal(ep));
  const sockets = new Set<Socket>();
  // A first request or connection to an address outside the cluster networks waits this long, at most,
  // for its outbound policy (as a new name waits for destination).
  const egress = { policies: opts.policies, waitMs: Math.max(500, config.outboundConnectTimeoutMs) };

  const http = stack(
    pushHttpServer<Accept>({ sink, headerReadTimeoutMs: config.headerReadTimeoutMs, h2Engine: config.h2Engine }),
    pushDiscover(discovery),
    pushEgress(egress),
    pushRoute({ policies: opts.policies, log, discovery }),
    pushBackend({ discovery }),
    pushBalance(health, accrual),
    pushConnect({ connector, labels }),
    pushTap({ tap: opts.tap, direction: 'outbound' }),
    forward(),
  );
  const tcp = stack(
    pushDiscoverTcp({ discovery, stream: (t) => tcpStream(t, 'outbound', metrics) }),
    pushBalance(health),
    relayTcp({ connector, labels, metrics, log }),
  );
  const refusals = { error: (code: string) => metrics.error('outbound', code), log };
  const tls = stack(
    pushDetectSni({ timeoutMs: config.detectTimeoutMs, ...refusals }),
    pushTlsRoute({ metrics: opts.policies?.tlsRouteMetrics, ...refusals }),
    tcp,
  );
  const opaque = stack(pushEgressTcp({ ...egress, ...refusals }), { opaque: tcp, tls });
  const server = stack(
    pushAccept({
      direction: 'outbound',
      log,
      sockets,
      originalDst: opts.originalDst,
      count: { metrics, labels: (orig) => labels.accept(orig) },
    }),
    pushDetect({ resolver: opts.resolver, opaquePorts: config.opaquePorts, timeoutMs: config.detectTimeoutMs }),
    { http: (t) => http.serve(t), opaque },
  );

  return {
    server,
    connector,
    drain: (graceMs) =>
      drainConnections(
        {
          server,
          h1: http.h1,
          serverSessions: http.sessions,
          sockets,
          release: () => {
            health.close();
            connector.close();
          },
        },
        graceMs,
      ),
  };
}
