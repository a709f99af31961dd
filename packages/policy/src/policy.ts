// Composition of the policy controller: informers → index → gRPC services, the admin server, and,
// with a Lease, the leader-elected route-status writer. main.ts parses flags and calls startPolicy;
// tests call it directly.
import { Server } from '@grpc/grpc-js';
import { cacheReadiness, LeaseElector, type KubeClient } from '@minimesh/kube';
import { bindGrpc } from '@minimesh/proto';
import { createRegistry, parseListenAddr, startAdminServer, type AdminServer, type Logger } from '@minimesh/runtime';
import type { Registry } from 'prom-client';
import type { ClusterInfo } from './cluster-info.js';
import { PolicyError } from './errors.js';
import { PolicyIndex } from './index/policy-index.js';
import { INDEXED_KINDS } from './index/store.js';
import { createPolicyInformers, type PolicyInformers } from './k8s/policy-informers.js';
import { createPolicyMetrics, type PolicyMetrics } from './metrics.js';
import {
  createInboundHandlers,
  createOutboundHandlers,
  INBOUND_SERVICE,
  OUTBOUND_SERVICE,
} from './server/policy-server.js';
import { RouteStatusWriter } from './status/status-writer.js';

/** The Lease that decides which replica writes route statuses (in the controller namespace). */
export interface StatusLeaseOptions {
  name: string;
  /** The holder identity: the pod name. */
  identity: string;
  durationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

export interface PolicyOptions {
  api: KubeClient;
  logger: Logger;
  cluster: ClusterInfo;
  /** gRPC listen address, e.g. "0.0.0.0:8090" (port 0 picks one). */
  addr: string;
  /** Admin listen address; omit to run without the admin server. */
  adminAddr?: string;
  allowL5dRequestHeaders?: boolean;
  /** Server-side watch timeout (default: random 300-600 s). */
  watchTimeoutSeconds?: number;
  registry?: Registry;
  /** Route statuses are written by the holder of this Lease; omitted: this replica writes none. */
  statusLease?: StatusLeaseOptions;
  /** How often the leader looks at every route's status even without a change (default 10 s). */
  statusResyncMs?: number;
}

export interface Policy {
  grpcPort: number;
  admin: AdminServer | undefined;
  index: PolicyIndex;
  informers: PolicyInformers;
  metrics: PolicyMetrics;
  /** The route-status writer and its elector (when a Lease was given). */
  status: { writer: RouteStatusWriter; elector: LeaseElector } | undefined;
  ready(): boolean;
  /** Resolves once every informer has listed its resource. */
  synced(): Promise<void>;
  close(): Promise<void>;
}

export async function startPolicy(opts: PolicyOptions): Promise<Policy> {
  const log = opts.logger;
  const registry = opts.registry ?? createRegistry();
  const metrics = createPolicyMetrics(registry);
  // The index tells the status writer about changes; the writer exists once the index does.
  let statusWriter: RouteStatusWriter | undefined;
  const index = new PolicyIndex(opts.cluster, {
    onInvalid: (p) => {
      log.warn({ kind: p.kind, namespace: p.namespace, name: p.name }, `ignoring a malformed resource: ${p.message}`);
      const invalid = index.store.invalid();
      for (const kind of INDEXED_KINDS)
        metrics.invalidResources.set({ kind }, invalid.filter((x) => x.kind === kind).length);
    },
    onDiagnostic: (message) => log.warn(message),
    onListenerError: (err) => log.error({ err }, 'a policy stream failed on an index change'),
    onChange: (kind) => statusWriter?.indexChanged(kind),
  });
  const informers = createPolicyInformers({
    api: opts.api,
    index,
    logger: log,
    metrics,
    ...(opts.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: opts.watchTimeoutSeconds } : {}),
  });
  const all = Object.values(informers);
  const { ready, synced, readiness } = cacheReadiness(informers);

  const server = new Server({ 'grpc.keepalive_time_ms': 30_000, 'grpc.keepalive_permit_without_calls': 1 });
  const serverLog = log.child({ component: 'server' });
  const inboundHandlers = createInboundHandlers({ index, metrics, logger: serverLog });
  const outboundHandlers = createOutboundHandlers({
    index,
    metrics,
    logger: serverLog,
    allowL5dRequestHeaders: opts.allowL5dRequestHeaders ?? false,
  });
  server.addService(INBOUND_SERVICE, inboundHandlers);
  server.addService(OUTBOUND_SERVICE, outboundHandlers);
  const { host, port } = parseListenAddr('--addr', opts.addr);
  const grpcPort = await bindGrpc(server, host, port).catch((err: Error) => {
    throw new PolicyError('MINIMESH_POLICY_LISTEN', `gRPC address ${opts.addr}: cannot listen: ${err.message}`, {
      cause: err,
    });
  });
  log.info({ addr: `${host}:${grpcPort}` }, 'gRPC server listening');

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
  // Answers before the caches are complete could deny (or admit) what the cluster says otherwise:
  // the gRPC services are registered but the watches start here, and proxies that ask early get
  // NotFound (pod unknown) and retry, keeping their configured default policy meanwhile.
  for (const informer of all) informer.start();

  // Statuses are written only from complete caches (a half-listed cluster would mark routes whose
  // Services are not listed yet as NoMatchingParent), and only by the Lease holder.
  let status: Policy['status'];
  let closed = false;
  if (opts.statusLease) {
    const l = opts.statusLease;
    let leading = false;
    const writer = new RouteStatusWriter({
      api: opts.api,
      index,
      logger: log,
      metrics,
      isLeader: () => leading && ready(),
      ...(opts.statusResyncMs !== undefined ? { resyncMs: opts.statusResyncMs } : {}),
    });
    const elector = new LeaseElector({
      api: opts.api,
      namespace: opts.cluster.controlPlaneNamespace,
      name: l.name,
      identity: l.identity,
      leaseDurationMs: l.durationMs,
      renewDeadlineMs: l.renewDeadlineMs,
      retryPeriodMs: l.retryPeriodMs,
      logger: log,
      onStartedLeading: () => {
        leading = true;
        metrics.statusLeader.set(1);
        writer.leadershipChanged(true);
      },
      onStoppedLeading: () => {
        leading = false;
        metrics.statusLeader.set(0);
        writer.leadershipChanged(false);
      },
    });
    statusWriter = writer;
    status = { writer, elector };
    void synced().then(() => {
      if (closed) return;
      writer.start();
      elector.start();
    });
  }

  return {
    grpcPort,
    admin,
    index,
    informers,
    metrics,
    status,
    ready,
    synced,
    async close() {
      closed = true;
      await status?.writer.stop();
      await status?.elector.stop();
      await Promise.all(all.map((i) => i.stop()));
      // Watches never end on their own: end them (proxies reconnect to another replica).
      inboundHandlers.endAll();
      outboundHandlers.endAll();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await admin?.close();
    },
  };
}
