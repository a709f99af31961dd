// Assembles a running proxy from its configuration: credentials, identity, discovery, both stacks,
// admin. main.ts only parses the environment and calls this; tests and benchmarks call it in-process.
import { createServer, type Server } from 'node:net';
import { createRegistry, type Logger } from '@minimesh/runtime';
import { destination, inbound as inboundApi, outbound as outboundApi } from '@minimesh/proto';
import type { ProxyConfig } from './config/proxy.js';
import { ReadyLatch, startProxyAdmin } from './admin/admin.js';
import { controlChannel } from './control/client.js';
import { DestinationResolver } from './destination/resolver.js';
import { CertifyClient } from './identity/certify-client.js';
import { installCheapAsyncBind } from './http/cheap-async-bind.js';
import { createInboundStack } from './inbound/index.js';
import { ProxyMetrics } from './metrics/metrics.js';
import { createOutboundStack } from './outbound/index.js';
import { requireAddon } from './native/index.js';
import { createPolicyRuntime, type PolicyRuntime } from './policy/runtime.js';
import type { OriginalDstFn } from './stack/accept.js';
import { createTapServer } from './tap/server.js';
import { TapLayer } from './tap/tap.js';
import { TlsCredentials } from './tls/credentials.js';

export interface RunningProxy {
  /** control: the tap server's port, 0 when this proxy serves no tap. */
  ports: { inbound: number; outbound: number; admin: number; control: number };
  metrics: ProxyMetrics;
  creds: TlsCredentials;
  latch: ReadyLatch;
  resolver: DestinationResolver;
  /** Resolves once the first certificate is in hand. */
  ready: Promise<void>;
  /** Graceful: stop accepting, let in-flight exchanges finish (up to the grace period), close. */
  shutdown(graceMs?: number): Promise<void>;
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, backlog: 1024 }, () => resolve((server.address() as { port: number }).port));
  });
}

export async function startProxy(
  config: ProxyConfig,
  logger: Logger,
  opts: {
    onShutdownRequest?: () => void;
    env?: Record<string, string | undefined>;
    originalDst?: { inbound?: OriginalDstFn; outbound?: OriginalDstFn };
  } = {},
): Promise<RunningProxy> {
  // A stack that reads SO_ORIGINAL_DST needs the addon: without it every redirected connection would be
  // reset after /ready said yes, so a proxy that cannot load it does not start (AddonMissingError).
  if (!opts.originalDst?.inbound || !opts.originalDst?.outbound) requireAddon();
  // One AsyncResource.bind per HTTP/2 request: without its deprecated accessor (see cheap-async-bind.ts).
  installCheapAsyncBind();
  const registry = createRegistry();
  const metrics = new ProxyMetrics(registry);
  const creds = new TlsCredentials(config.localIdentity, config.trustAnchorsPem);
  const latch = new ReadyLatch();

  let dstClient: destination.DestinationClient | undefined;
  let dstClientHasCert = false;
  const client = () => {
    const haveCert = creds.certificate !== undefined;
    if (!dstClient || (haveCert && !dstClientHasCert)) {
      dstClient?.close();
      const ch = controlChannel(config.destination, creds);
      dstClient = new destination.DestinationClient(ch.target, ch.credentials, ch.options);
      dstClientHasCert = haveCert;
    }
    return dstClient;
  };
  const resolver = new DestinationResolver({
    client,
    contextToken: config.destinationContext,
    idleMs: config.outboundDiscoveryIdleMs,
    firstUpdateTimeoutMs: Math.max(500, config.outboundConnectTimeoutMs),
    logger: logger.child({ component: 'destination' }),
  });

  const identity = new CertifyClient({
    addr: config.identity,
    localIdentity: config.localIdentity,
    tokenFile: config.tokenFile,
    tls: creds,
    metrics,
    logger: logger.child({ component: 'identity' }),
  });
  const ready = identity.start().then(() => latch.release());

  // Tap: only when the tap service's identity is configured (Linkerd's LINKERD2_PROXY_TAP_SVC_NAME).
  const tap = config.tapSvcName !== undefined ? new TapLayer() : undefined;

  const policy: PolicyRuntime = createPolicyRuntime({
    config,
    registry,
    logger,
    channel: () => (config.policy.controller ? controlChannel(config.policy.controller, creds) : undefined),
    haveCert: () => creds.certificate !== undefined,
    clients: { inbound: inboundApi.InboundServerPoliciesClient, outbound: outboundApi.OutboundPoliciesClient },
  });

  const outbound = createOutboundStack({
    config,
    tap,
    resolver,
    creds,
    metrics,
    logger,
    policies: policy.outbound,
    originalDst: opts.originalDst?.outbound,
  });
  const inboundPort = config.inboundAddr.port;
  const outboundPort = config.outboundAddr.port;
  const inbound = createInboundStack({
    config,
    tap,
    creds,
    metrics,
    logger,
    proxyPorts: [inboundPort, outboundPort, config.controlAddr.port].filter((p) => p > 0),
    originalDst: opts.originalDst?.inbound,
    authz: policy.authz,
  });
  const boundOut = await listen(outbound.server, config.outboundAddr.host, config.outboundAddr.port);
  // More outbound addresses (IPv6's [::1] beside 127.0.0.1): each hands its connections to the one stack.
  const extraOut: Server[] = [];
  for (const addr of config.outboundExtraAddrs) {
    const extra = createServer((socket) => outbound.server.emit('connection', socket));
    await listen(extra, addr.host, addr.port);
    extraOut.push(extra);
  }
  const boundIn = await listen(inbound.server, config.inboundAddr.host, config.inboundAddr.port);
  const tapServer =
    tap && config.tapSvcName
      ? createTapServer({
          layer: tap,
          creds,
          tapSvcName: config.tapSvcName,
          log: logger.child({ component: 'tap' }),
        })
      : undefined;
  const boundControl = tapServer
    ? await listen(tapServer as unknown as Server, config.controlAddr.host, config.controlAddr.port)
    : 0;
  let shuttingDown: Promise<void> | undefined;
  const admin = await startProxyAdmin({
    addr: config.adminAddr,
    logger,
    registry,
    latch,
    shutdownEnabled: config.shutdownEndpointEnabled,
    onShutdown: () => (opts.onShutdownRequest ? opts.onShutdownRequest() : void shutdown()),
    env: opts.env ?? {},
    headerReadTimeoutMs: config.headerReadTimeoutMs,
  });
  logger.info(
    {
      inbound: `${config.inboundAddr.host}:${boundIn}`,
      outbound: [
        `${config.outboundAddr.host}:${boundOut}`,
        ...config.outboundExtraAddrs.map((a) => `[${a.host}]:${a.port}`),
      ].join(','),
      admin: config.adminAddr,
      identity: config.localIdentity,
      tap: tapServer ? `${config.controlAddr.host}:${boundControl} (only ${config.tapSvcName})` : 'off',
    },
    'proxy listening',
  );

  function shutdown(graceMs = config.shutdownGracePeriodMs): Promise<void> {
    shuttingDown ??= (async () => {
      logger.info({ graceMs }, 'draining');
      tapServer?.close();
      for (const extra of extraOut) extra.close();
      await Promise.all([outbound.drain(graceMs), inbound.drain(graceMs)]);
      identity.stop();
      resolver.close();
      dstClient?.close();
      policy.close();
      await admin.close();
      logger.info('proxy stopped');
    })();
    return shuttingDown;
  }

  return {
    ports: { inbound: boundIn, outbound: boundOut, admin: admin.port, control: boundControl },
    metrics,
    creds,
    latch,
    resolver,
    ready,
    shutdown,
  };
}
