#!/usr/bin/env node
// minimesh-destination: flags → logger → kubeconfig → startDestination → wait for a signal.
import { hostname } from 'node:os';
import { setLogger } from '@grpc/grpc-js';
import {
  DEFAULT_PORTS,
  parseBoolean,
  parseDuration,
  parseLogFormat,
  parseLogLevel,
  parsePortRanges,
  ConfigError,
} from '@minimesh/config';
import { createLogger, parseFlags, parseListenAddr, runMain, UsageError } from '@minimesh/runtime';
import { startDestination } from './destination.js';
import { createApiClient, loadKubeConfig } from './k8s/api-client.js';

const PROGRAM = {
  name: 'minimesh-destination',
  summary: 'service discovery for minimesh proxies, fed by Kubernetes watch streams',
};

const FLAGS = {
  addr: { type: 'string', default: `0.0.0.0:${DEFAULT_PORTS.destination}`, description: 'gRPC listen address' },
  'admin-addr': {
    type: 'string',
    default: `0.0.0.0:${DEFAULT_PORTS.destinationAdmin}`,
    description: 'admin listen address (/live, /ready, /metrics)',
  },
  'controller-namespace': {
    type: 'string',
    default: 'minimesh',
    description: 'namespace of the control plane (meshed pods carry it in minimesh.io/control-plane-ns)',
  },
  'cluster-domain': { type: 'string', default: 'cluster.local', description: 'Kubernetes cluster domain' },
  'identity-trust-domain': { type: 'string', default: 'cluster.local', description: 'trust domain of mesh identities' },
  'default-opaque-ports': {
    type: 'string',
    default: '25,587,3306,4444,5432,6379,9300,11211',
    description: 'ports treated as opaque TCP unless annotated otherwise (e.g. 3306,5432,10000-10010)',
  },
  'enable-h2-upgrade': {
    type: 'string',
    default: 'true',
    description: 'hint meshed endpoints as HTTP/2-capable (true|false)',
  },
  'stream-queue-capacity': {
    type: 'string',
    default: '100',
    description: 'updates queued per stream before a slow stream is closed',
  },
  kubeconfig: {
    type: 'string',
    default: '',
    description: 'kubeconfig file (default: in-cluster service account, then $KUBECONFIG / ~/.kube/config)',
  },
  'lease-name': {
    type: 'string',
    default: 'minimesh-destination-endpoint-write',
    description: 'coordination.k8s.io Lease for leader election (in the controller namespace)',
  },
  'lease-duration': {
    type: 'string',
    default: '30s',
    description: 'how long a leader keeps the lease without renewing it',
  },
  'lease-renew-deadline': {
    type: 'string',
    default: '10s',
    description: 'how long the leader keeps trying to renew before stepping down',
  },
  'lease-retry-period': {
    type: 'string',
    default: '2s',
    description: 'how often candidates try and the leader renews',
  },
  'log-level': { type: 'string', default: 'info', description: 'trace, debug, info, warn, error' },
  'log-format': { type: 'string', default: 'plain', description: 'plain or json' },
} as const;

function usage(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError || (err as { code?: string }).code === 'MINIMESH_RUNTIME_BAD_ADDR')
      throw new UsageError((err as Error).message, { cause: err });
    throw err;
  }
}

await runMain(PROGRAM.name, async (argv) => {
  const parsed = parseFlags(PROGRAM, FLAGS, argv);
  if ('help' in parsed) {
    process.stdout.write(parsed.help);
    return 0;
  }
  const f = parsed.values;
  let cfg!: {
    logLevel: string;
    logFormat: 'plain' | 'json';
    opaque: ReturnType<typeof parsePortRanges>;
    h2: boolean;
    capacity: number;
    durationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
  };
  usage(() => {
    parseListenAddr('--addr', f.addr);
    parseListenAddr('--admin-addr', f['admin-addr']);
    const capacity = Number(f['stream-queue-capacity']);
    if (!/^\d+$/.test(f['stream-queue-capacity']) || capacity < 1)
      throw new ConfigError('--stream-queue-capacity', f['stream-queue-capacity'], 'a whole number of at least 1');
    cfg = {
      logLevel: parseLogLevel('--log-level', f['log-level']),
      logFormat: parseLogFormat('--log-format', f['log-format']),
      opaque: parsePortRanges('--default-opaque-ports', f['default-opaque-ports']),
      h2: parseBoolean('--enable-h2-upgrade', f['enable-h2-upgrade']),
      capacity,
      durationMs: parseDuration('--lease-duration', f['lease-duration']),
      renewDeadlineMs: parseDuration('--lease-renew-deadline', f['lease-renew-deadline']),
      retryPeriodMs: parseDuration('--lease-retry-period', f['lease-retry-period']),
    };
    if (!(cfg.durationMs > cfg.renewDeadlineMs && cfg.renewDeadlineMs > cfg.retryPeriodMs && cfg.retryPeriodMs > 0)) {
      throw new ConfigError(
        '--lease-duration',
        `${f['lease-duration']}/${f['lease-renew-deadline']}/${f['lease-retry-period']}`,
        'lease duration > renew deadline > retry period > 0',
      );
    }
  });

  const logger = createLogger({ name: 'destination', level: cfg.logLevel, format: cfg.logFormat });
  // grpc-js's own diagnostics go through our logger instead of bare stderr lines
  const grpcLog = logger.child({ component: 'grpc-js' });
  setLogger({ error: (...args: unknown[]) => grpcLog.debug(args.map(String).join(' ')) } as Console);
  const api = createApiClient(loadKubeConfig(f.kubeconfig || undefined));
  const identity = process.env.POD_NAME || hostname();
  const dst = await startDestination({
    api,
    logger,
    addr: f.addr,
    adminAddr: f['admin-addr'],
    controllerNamespace: f['controller-namespace'],
    clusterDomain: f['cluster-domain'],
    identityTrustDomain: f['identity-trust-domain'],
    defaultOpaquePorts: cfg.opaque,
    enableH2Upgrade: cfg.h2,
    streamQueueCapacity: cfg.capacity,
    lease: {
      name: f['lease-name'],
      identity,
      durationMs: cfg.durationMs,
      renewDeadlineMs: cfg.renewDeadlineMs,
      retryPeriodMs: cfg.retryPeriodMs,
    },
  });
  void dst.synced().then(() => logger.info('all caches synced: ready'));

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await dst.close({ release: true });
  logger.info('stopped');
  return 0;
});
