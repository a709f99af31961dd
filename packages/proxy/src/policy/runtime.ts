// The proxy's policy machinery, assembled once: the policy controller's gRPC clients (plaintext on
// loopback, else mTLS to the controller's identity, remade once our certificate arrives, as the other
// control-plane clients), inbound policies per port with the authorization layer and its metrics, and
// outbound policies for the route layer.
import type { ChannelCredentials, ChannelOptions } from '@grpc/grpc-js';
import type { PortRange } from '@minimesh/config';
import type { inbound, outbound } from '@minimesh/proto';
import type { Logger } from '@minimesh/runtime';
import type { Registry } from 'prom-client';
import type { ProxyConfig } from '../config/proxy.js';
import { AuthzMetrics } from './authz-metrics.js';
import { createInboundAuthz, type InboundAuthz } from './inbound-authz.js';
import { InboundPolicies } from './inbound-policies.js';
import { OutboundPolicies } from './outbound-policies.js';

/** Linkerd's idle times: inbound ports 90 s, outbound targets 5 s (ours: the discovery idle time). */
const INBOUND_IDLE_MS = 90_000;

export interface PolicyRuntime {
  authz: InboundAuthz;
  inbound: InboundPolicies;
  outbound: OutboundPolicies;
  close(): void;
}

type Ctor<T> = new (address: string, credentials: ChannelCredentials, options?: Partial<ChannelOptions>) => T;

export function createPolicyRuntime(opts: {
  config: ProxyConfig;
  registry: Registry;
  logger: Logger;
  /** The channel to the controller (undefined: none configured). */
  channel: () => { target: string; credentials: ChannelCredentials; options: ChannelOptions } | undefined;
  haveCert: () => boolean;
  clients: { inbound: Ctor<inbound.InboundServerPoliciesClient>; outbound: Ctor<outbound.OutboundPoliciesClient> };
}): PolicyRuntime {
  const { config } = opts;
  const pc = config.policy;
  let made:
    | { inbound: inbound.InboundServerPoliciesClient; outbound: outbound.OutboundPoliciesClient; cert: boolean }
    | undefined;
  const clients = () => {
    const cert = opts.haveCert();
    if (!made || (cert && !made.cert)) {
      made?.inbound.close();
      made?.outbound.close();
      const ch = opts.channel();
      if (!ch) throw new Error('no policy controller configured');
      made = {
        inbound: new opts.clients.inbound(ch.target, ch.credentials, ch.options),
        outbound: new opts.clients.outbound(ch.target, ch.credentials, ch.options),
        cert,
      };
    }
    return made;
  };
  const configured = pc.controller !== undefined;
  const log = opts.logger.child({ component: 'policy' });
  const inboundPolicies = new InboundPolicies({
    client: configured ? () => clients().inbound : undefined,
    workload: pc.workload,
    defaultPolicy: pc.defaultPolicy,
    clusterNetworks: pc.clusterNetworks,
    detectTimeoutMs: config.detectTimeoutMs,
    opaquePorts: config.opaquePorts,
    ports: expandPorts(config.inboundPorts),
    idleMs: INBOUND_IDLE_MS,
    logger: log,
  });
  const outboundPolicies = new OutboundPolicies({
    client: configured ? () => clients().outbound : undefined,
    workload: pc.workload,
    idleMs: Math.max(5_000, config.outboundDiscoveryIdleMs),
    logger: log,
    registry: opts.registry,
    clusterNetworks: pc.clusterNetworks,
  });
  const authz = createInboundAuthz({
    policies: inboundPolicies,
    metrics: new AuthzMetrics(opts.registry),
    logger: log,
  });
  return {
    authz,
    inbound: inboundPolicies,
    outbound: outboundPolicies,
    close() {
      inboundPolicies.close();
      outboundPolicies.close();
      made?.inbound.close();
      made?.outbound.close();
    },
  };
}

/** The pod's declared ports, watched from the start (at most 64, as a list of ranges could be huge). */
function expandPorts(ranges: readonly PortRange[]): number[] {
  const out: number[] = [];
  for (const r of ranges) for (let p = r.lo; p <= r.hi && out.length < 64; p++) out.push(p);
  return out;
}
