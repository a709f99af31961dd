#!/usr/bin/env node
// minimesh-policy: its flags and wiring; the skeleton (@minimesh/runtime defineProgram) does the rest.
import { hostname } from 'node:os';
import { setLogger } from '@grpc/grpc-js';
import {
  ConfigError,
  MINIMESH_VERSION,
  parseBoolean,
  parseCidrList,
  parseDuration,
  parsePortRanges,
} from '@minimesh/config';
import { kubeClientFromFlags, kubeFlags, leaseFlags, parseKubeFlags, parseLeaseFlags } from '@minimesh/kube';
import { defineProgram, parseListenAddr } from '@minimesh/runtime';
import { DEFAULT_CLUSTER_NETWORKS, POLICY_PORTS } from './cluster-info.js';
import { parseDefaultPolicy } from './defaults.js';
import { DEFAULT_POLICIES } from './model.js';
import { startPolicy } from './policy.js';

await defineProgram({
  name: 'minimesh-policy',
  summary:
    "the policy controller: serves Linkerd's policy API (InboundServerPolicies, OutboundPolicies) from policy.minimesh.io resources",
  version: MINIMESH_VERSION,
  flags: {
    addr: { type: 'string', default: `0.0.0.0:${POLICY_PORTS.grpc}`, description: 'gRPC listen address' },
    'admin-addr': {
      type: 'string',
      default: `0.0.0.0:${POLICY_PORTS.admin}`,
      description: 'admin listen address (/live, /ready, /metrics)',
    },
    'controller-namespace': { type: 'string', default: 'minimesh', description: 'namespace of the control plane' },
    'cluster-domain': { type: 'string', default: 'cluster.local', description: 'Kubernetes cluster domain' },
    'identity-trust-domain': {
      type: 'string',
      default: 'cluster.local',
      description: 'trust domain of mesh identities',
    },
    'cluster-networks': {
      type: 'string',
      default: DEFAULT_CLUSTER_NETWORKS.join(','),
      description: 'pod and service networks: what cluster-* default policies admit',
    },
    'default-policy': {
      type: 'string',
      default: 'all-unauthenticated',
      description: `what a port admits when no Server selects it: ${DEFAULT_POLICIES.join(', ')}`,
    },
    'probe-networks': {
      type: 'string',
      default: '0.0.0.0/0,::/0',
      description: 'where kubelet probes come from (admitted to probe paths whatever the policy); empty: none',
    },
    'default-opaque-ports': {
      type: 'string',
      default: '25,587,3306,4444,5432,6379,9300,11211',
      description: 'ports treated as opaque TCP unless annotated otherwise',
    },
    'detect-timeout': { type: 'string', default: '10s', description: 'protocol-detection timeout of default servers' },
    'allow-l5d-request-headers': {
      type: 'string',
      default: 'false',
      description: 'let l5d-* request headers override route timeouts and retries (true|false)',
    },
    ...kubeFlags(),
    // Linkerd's policy controller writes route statuses under its Lease "policy-controller-write".
    ...leaseFlags('minimesh-policy-write'),
    'status-resync': {
      type: 'string',
      default: '10s',
      description: 'how often the leader checks every route status even when nothing changed',
    },
  },
  configure({ flags: f }) {
    parseListenAddr('--addr', f.addr);
    parseListenAddr('--admin-addr', f['admin-addr']);
    parseKubeFlags(f);
    const defaultPolicy = parseDefaultPolicy(f['default-policy']);
    if (!defaultPolicy)
      throw new ConfigError('--default-policy', f['default-policy'], `one of ${DEFAULT_POLICIES.join(', ')}`);
    const cidrs = (flag: string, value: string) => parseCidrList(flag, value).map((c) => `${c.address}/${c.prefix}`);
    const statusResyncMs = parseDuration('--status-resync', f['status-resync']);
    if (statusResyncMs < 1000)
      throw new ConfigError('--status-resync', f['status-resync'], 'a duration of at least 1s');
    const networks = cidrs('--cluster-networks', f['cluster-networks']);
    if (networks.length === 0) throw new ConfigError('--cluster-networks', f['cluster-networks'], 'at least one CIDR');
    return {
      cluster: {
        networks,
        controlPlaneNamespace: f['controller-namespace'],
        clusterDomain: f['cluster-domain'],
        identityDomain: f['identity-trust-domain'],
        defaultPolicy,
        defaultDetectTimeoutMs: parseDuration('--detect-timeout', f['detect-timeout']),
        defaultOpaquePorts: parsePortRanges('--default-opaque-ports', f['default-opaque-ports']),
        probeNetworks: cidrs('--probe-networks', f['probe-networks']),
      },
      allowL5d: parseBoolean('--allow-l5d-request-headers', f['allow-l5d-request-headers']),
      lease: parseLeaseFlags(f, parseDuration),
      statusResyncMs,
    };
  },
  async run({ flags: f, config, logger, env }) {
    const grpcLog = logger.child({ component: 'grpc-js' });
    setLogger({ error: (...args: unknown[]) => grpcLog.debug(args.map(String).join(' ')) } as Console);
    const api = await kubeClientFromFlags(f, { userAgent: `minimesh-policy/${MINIMESH_VERSION}` });
    const policy = await startPolicy({
      api,
      logger,
      cluster: config.cluster,
      addr: f.addr,
      adminAddr: f['admin-addr'],
      allowL5dRequestHeaders: config.allowL5d,
      statusLease: { ...config.lease, identity: env.POD_NAME || hostname() },
      statusResyncMs: config.statusResyncMs,
    }).catch(async (err: unknown) => {
      await api.close();
      throw err;
    });
    logger.info(
      { defaultPolicy: config.cluster.defaultPolicy, clusterNetworks: config.cluster.networks },
      'policy controller started',
    );
    void policy.synced().then(() => logger.info('all caches synced: ready'));
    return {
      async close() {
        await policy.close();
        await api.close();
      },
    };
  },
}).start();
