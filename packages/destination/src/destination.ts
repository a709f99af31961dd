// Composition of the destination program: informers → index → gRPC server, the leader elector with
// its ExternalWorkload mirror, and the admin server. main.ts parses flags and calls startDestination;
// tests and benchmarks call it directly.
import { Server } from '@grpc/grpc-js';
import { cacheReadiness, LeaseElector, type KubeClient } from '@minimesh/kube';
import { bindGrpc, HealthImplementation } from '@minimesh/proto';
import type { PortRange } from '@minimesh/config';
import { createRegistry, parseListenAddr, startAdminServer, type AdminServer, type Logger } from '@minimesh/runtime';
import type { Registry } from 'prom-client';
import { DestinationError } from './errors.js';
import { EndpointIndex } from './index/endpoint-index.js';
import { createResourceInformers, type ResourceInformers } from './k8s/resource-informers.js';
import { ExternalWorkloadMirror } from './leader/external-workload-mirror.js';
import { createDestinationMetrics, type DestinationMetrics } from './metrics.js';
import { createDestinationHandlers, destinationServiceDefinition } from './server/destination-server.js';

export interface DestinationOptions {
  api: KubeClient;
  logger: Logger;
  /** gRPC listen address, e.g. "0.0.0.0:8086" (port 0 picks one). */
  addr: string;
  /** Admin listen address; omit to run without the admin server. */
  adminAddr?: string;
  controllerNamespace: string;
  clusterDomain: string;
  identityTrustDomain: string;
  defaultOpaquePorts: readonly PortRange[];
  enableH2Upgrade: boolean;
  streamQueueCapacity: number;
  /** Open streams per client (default 1000); see DestinationServerOptions. */
  maxStreamsPerClient?: number;
  lease: {
    name: string;
    identity: string;
    durationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
  };
  /** Server-side watch timeout (default: random 300-600 s). */
  watchTimeoutSeconds?: number;
  registry?: Registry;
}

export interface Destination {
  grpcPort: number;
  admin: AdminServer | undefined;
  index: EndpointIndex;
  informers: ResourceInformers;
  elector: LeaseElector;
  mirror: ExternalWorkloadMirror;
  metrics: DestinationMetrics;
  /** True once every informer has listed its resource. */
  ready(): boolean;
  /** Resolves once every informer has listed its resource. */
  synced(): Promise<void>;
  /** Stops serving; release=false simulates a crash (the lease is left to expire). */
  close(opts?: { release?: boolean }): Promise<void>;
}

export async function startDestination(opts: DestinationOptions): Promise<Destination> {
  const log = opts.logger;
  const registry = opts.registry ?? createRegistry();
  const metrics = createDestinationMetrics(registry);
  const index = new EndpointIndex({
    onListenerError: (err) => log.error({ err }, 'a stream listener failed on an index change'),
  });
  const informers = createResourceInformers({
    api: opts.api,
    index,
    logger: log,
    metrics,
    ...(opts.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: opts.watchTimeoutSeconds } : {}),
  });
  const all = Object.values(informers);
  const { ready, synced, readiness } = cacheReadiness(informers);

  const server = new Server({ 'grpc.keepalive_time_ms': 30_000, 'grpc.keepalive_permit_without_calls': 1 });
  server.addService(
    destinationServiceDefinition,
    createDestinationHandlers({
      index,
      metrics,
      logger: log.child({ component: 'server' }),
      streamQueueCapacity: opts.streamQueueCapacity,
      ...(opts.maxStreamsPerClient !== undefined ? { maxStreamsPerClient: opts.maxStreamsPerClient } : {}),
      translator: {
        controllerNamespace: opts.controllerNamespace,
        clusterDomain: opts.clusterDomain,
        identityTrustDomain: opts.identityTrustDomain,
        defaultOpaquePorts: opts.defaultOpaquePorts,
        enableH2Upgrade: opts.enableH2Upgrade,
      },
    }),
  );
  // grpc.health.v1 on the same port: SERVING once every cache has synced (like /ready).
  const health = new HealthImplementation({
    '': 'NOT_SERVING',
    'io.linkerd.proxy.destination.Destination': 'NOT_SERVING',
  });
  health.addToServer(server);
  void synced().then(() => {
    health.setStatus('', 'SERVING');
    health.setStatus('io.linkerd.proxy.destination.Destination', 'SERVING');
  });
  const { host, port } = parseListenAddr('--addr', opts.addr);
  const grpcPort = await bindGrpc(server, host, port).catch((err: Error) => {
    throw new DestinationError(
      'MINIMESH_DESTINATION_LISTEN',
      `gRPC address ${opts.addr}: cannot listen: ${err.message}`,
      {
        cause: err,
      },
    );
  });
  log.info({ addr: `${host}:${grpcPort}` }, 'gRPC server listening');

  // Listen first, watch after: a port that cannot be bound fails the start with nothing left running.
  let admin: AdminServer | undefined;
  try {
    admin = opts.adminAddr
      ? await startAdminServer({
          addr: opts.adminAddr,
          logger: log,
          registry,
          ready: readiness,
        })
      : undefined;
  } catch (err) {
    server.forceShutdown();
    throw err;
  }
  for (const informer of all) informer.start();

  const mirror = new ExternalWorkloadMirror({ api: opts.api, index, logger: log, metrics });
  const elector = new LeaseElector({
    api: opts.api,
    namespace: opts.controllerNamespace,
    name: opts.lease.name,
    identity: opts.lease.identity,
    leaseDurationMs: opts.lease.durationMs,
    renewDeadlineMs: opts.lease.renewDeadlineMs,
    retryPeriodMs: opts.lease.retryPeriodMs,
    logger: log,
    onStartedLeading: () => {
      metrics.leader.set(1);
      // The mirror compares against the caches, so it waits for them.
      void synced().then(() => {
        if (elector.isLeader) mirror.start();
      });
    },
    onStoppedLeading: () => {
      metrics.leader.set(0);
      void mirror.stop();
    },
  });
  elector.start();

  return {
    grpcPort,
    admin,
    index,
    informers,
    elector,
    mirror,
    metrics,
    ready,
    synced,
    async close(closeOpts = {}) {
      await mirror.stop();
      await elector.stop({ release: closeOpts.release ?? true });
      await Promise.all(all.map((i) => i.stop()));
      // Get streams never end on their own: cancel them (proxies reconnect to another replica).
      server.forceShutdown();
      await admin?.close();
    },
  };
}
