// The inbound proxy (mesh → :4143 → the app), as three chains of stages, each read top-down in the order
// a request or connection meets them (layers.ts; docs/proxy.md draws the same path):
//   http         authorize → rate limit → route (filters) → connect (the app) → tap → forward
//   opaque TCP   authorize → relay (the app)
//   connections  accept → admit → tls → detect → (HTTP server → http | opaque TCP)
// TLS hands HTTP/2 over our mTLS (ALPN h2) straight to the HTTP server.
import type { Server, Socket } from 'node:net';
import { portInRanges } from '@minimesh/config';
import type { Logger } from '@minimesh/runtime';
import type { ProxyConfig } from '../config/proxy.js';
import { drainConnections } from '../drain.js';
import type { ExchangeSink } from '../http/exchange.js';
import { stack } from '../layers.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { InboundLabels } from '../metrics/traffic-labels.js';
import { policyIsOpaque, type InboundAuthz } from '../policy/inbound-authz.js';
import { pushAccept, type OriginalDstFn } from '../stack/accept.js';
import { forward } from '../stack/forward.js';
import { pushHttpServer } from '../stack/http-server.js';
import { pushTap } from '../stack/tap.js';
import type { TapLayer } from '../tap/tap.js';
import type { InboundConn } from '../targets.js';
import type { TlsCredentials } from '../tls/credentials.js';
import { AppEndpoints } from '../transport/app.js';
import { Connector } from '../transport/connector.js';
import { pushAdmit } from './admit.js';
import { pushAuthorizeTcp } from './authorize-tcp.js';
import { pushAuthorize } from './authorize.js';
import { pushConnect } from './connect.js';
import { pushDetect } from './detect.js';
import { relayToApp } from './relay.js';
import { pushRateLimit } from './rate-limit.js';
import { pushRoute } from './route.js';
import { pushTls } from './tls.js';

export interface InboundStackOptions {
  config: ProxyConfig;
  creds: TlsCredentials;
  metrics: ProxyMetrics;
  logger: Logger;
  /** Ports of this proxy: a connection whose original destination is one of them would loop. */
  proxyPorts: number[];
  /** Test/bench seam: how to learn the original destination (default: SO_ORIGINAL_DST). */
  originalDst?: OriginalDstFn | undefined;
  /** The tap layer (only when this proxy serves tap). */
  tap?: TapLayer | undefined;
  /** Authorization by the ports' policies; absent: everything is admitted. */
  authz?: InboundAuthz | undefined;
}

export interface InboundStack {
  server: Server;
  drain(graceMs: number): Promise<void>;
}

export function createInboundStack(opts: InboundStackOptions): InboundStack {
  const { config, creds, metrics, authz } = opts;
  const log = opts.logger.child({ component: 'inbound' });
  const sink: ExchangeSink = { direction: 'inbound', metrics, log };
  const connector = new Connector(creds, config.inboundConnectTimeoutMs, undefined, undefined, config.h2Engine);
  const app = new AppEndpoints();
  const labels = new InboundLabels();
  const sockets = new Set<Socket>();
  /** A port whose traffic is not sniffed: configured opaque, or opaque / TLS by its policy. */
  const opaquePort = (port: number): boolean =>
    portInRanges(port, config.opaquePorts) || (authz !== undefined && policyIsOpaque(authz, port));

  const http = stack(
    pushHttpServer<InboundConn>({ sink, headerReadTimeoutMs: config.headerReadTimeoutMs, h2Engine: config.h2Engine }),
    pushAuthorize(authz),
    pushRateLimit(authz),
    pushRoute(),
    pushConnect({ connector, labels, app }),
    pushTap({ tap: opts.tap, direction: 'inbound' }),
    forward(),
  );
  const opaque = stack(pushAuthorizeTcp(authz), relayToApp({ connector, metrics, app }));
  const server = stack(
    pushAccept({ direction: 'inbound', log, sockets, originalDst: opts.originalDst }),
    pushAdmit({ proxyPorts: opts.proxyPorts, metrics, log }),
    pushTls({ creds, metrics, labels, log, opaquePort, detectTimeoutMs: config.detectTimeoutMs, http }),
    pushDetect({ opaquePort, timeoutMs: config.detectTimeoutMs }),
    { http: (t) => http.serve(t), opaque },
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
