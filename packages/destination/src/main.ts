#!/usr/bin/env node
// minimesh-destination: its flags and wiring; the skeleton (@minimesh/runtime defineProgram) does the rest.
import { hostname } from 'node:os';
import { setLogger } from '@grpc/grpc-js';
import {
  ConfigError,
  DEFAULT_PORTS,
  MINIMESH_VERSION,
  parseBoolean,
  parseDuration,
  parsePortRanges,
} from '@minimesh/config';
import { kubeClientFromFlags, kubeFlags, leaseFlags, parseKubeFlags, parseLeaseFlags } from '@minimesh/kube';
import { defineProgram, parseListenAddr } from '@minimesh/runtime';
import { startDestination } from './destination.js';

await defineProgram({
  name: 'minimesh-destination',
  summary: 'service discovery for minimesh proxies, fed by Kubernetes watch streams',
  version: MINIMESH_VERSION,
  // Old generation 30 % over live. The young generation keeps V8's own size (up to 2 × 16 MiB): capped at
  // 2 × 2 MiB, scavenges sat in the path of every update (docs/destination.md, "Lean control plane").
  heap: { heapGrowingPercent: 30 },
  flags: {
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
    'identity-trust-domain': {
      type: 'string',
      default: 'cluster.local',
      description: 'trust domain of mesh identities',
    },
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
    'max-streams-per-client': {
      type: 'string',
      default: '1000',
      description: 'open Get/GetProfile streams one client (peer IP or meshed identity) may hold',
    },
    ...kubeFlags(),
    ...leaseFlags('minimesh-destination-endpoint-write'),
  },
  configure({ flags: f }) {
    parseListenAddr('--addr', f.addr);
    parseListenAddr('--admin-addr', f['admin-addr']);
    parseKubeFlags(f);
    const capacity = Number(f['stream-queue-capacity']);
    if (!/^\d+$/.test(f['stream-queue-capacity']) || capacity < 1)
      throw new ConfigError('--stream-queue-capacity', f['stream-queue-capacity'], 'a whole number of at least 1');
    const maxStreams = Number(f['max-streams-per-client']);
    if (!/^\d+$/.test(f['max-streams-per-client']) || maxStreams < 1)
      throw new ConfigError('--max-streams-per-client', f['max-streams-per-client'], 'a whole number of at least 1');
    const { name: _name, ...lease } = parseLeaseFlags(f, parseDuration);
    return {
      opaque: parsePortRanges('--default-opaque-ports', f['default-opaque-ports']),
      h2: parseBoolean('--enable-h2-upgrade', f['enable-h2-upgrade']),
      capacity,
      maxStreams,
      lease,
    };
  },
  async run({ flags: f, config, logger, env }) {
    // grpc-js's own diagnostics go through our logger instead of bare stderr lines
    const grpcLog = logger.child({ component: 'grpc-js' });
    setLogger({ error: (...args: unknown[]) => grpcLog.debug(args.map(String).join(' ')) } as Console);
    const api = await kubeClientFromFlags(f, { userAgent: `minimesh-destination/${MINIMESH_VERSION}` });
    const dst = await startDestination({
      api,
      logger,
      addr: f.addr,
      adminAddr: f['admin-addr'],
      controllerNamespace: f['controller-namespace'],
      clusterDomain: f['cluster-domain'],
      identityTrustDomain: f['identity-trust-domain'],
      defaultOpaquePorts: config.opaque,
      enableH2Upgrade: config.h2,
      streamQueueCapacity: config.capacity,
      maxStreamsPerClient: config.maxStreams,
      lease: { name: f['lease-name'], identity: env.POD_NAME || hostname(), ...config.lease },
    }).catch(async (err: unknown) => {
      await api.close();
      throw err;
    });
    void dst.synced().then(() => logger.info('all caches synced: ready'));
    return {
      async close() {
        await dst.close({ release: true });
        await api.close();
      },
    };
  },
}).start();
