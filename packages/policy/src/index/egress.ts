// Egress: which EgressNetwork an address outside the cluster networks belongs to, for a client in a
// namespace, and what that client is told about it (the routes attached to the EgressNetwork and its
// traffic policy). Pure functions of the store, as Linkerd's outbound index resolves them
// (policy-controller/k8s/index/src/outbound/index/egress_network.rs, linkerd2 edge-26.8.3, read on
// 2026-11-28):
// 1. if the client's namespace has EgressNetworks, only they are considered; else those of the global
//    egress namespace (here the control plane's);
// 2. an EgressNetwork matches when one of its networks contains the address and none of that network's
//    exceptions does; without networks it matches every address outside the cluster networks;
// 3. the most specific match wins (the longest prefix of a network containing the address), then the
//    older EgressNetwork, then the first by namespace and name.
// Only addresses outside the cluster networks are classified at all: an EgressNetwork whose networks
// reach into the cluster networks never makes cluster traffic egress (its status says so).
import { cidrContains, parseCidr, parseIp, portInRanges, type IpValue } from '@minimesh/config';
import type { EgressPolicy } from '../model.js';
import type { EgressNetworkSpec } from '../resources/egress-network.js';
import { byCreationThenName } from '../resources/fields.js';
import {
  routeRef,
  toOutboundGrpcRoute,
  toOutboundHttpRoute,
  toOutboundTcpRoute,
  toOutboundTlsRoute,
} from './outbound.js';
import { attachedRoutes } from './route-attachment.js';
import type { ResourceStore } from './store.js';

/** Whether the address lies inside one of the cluster networks (never egress). */
export function inClusterNetworks(networks: readonly string[], ip: string): boolean {
  return networks.some((c) => cidrContains(parseCidr('cluster networks', c), ip) === true);
}

/** The prefix length of the most specific network of `net` containing ip, or undefined when none does. */
export function matchLength(net: EgressNetworkSpec, ip: IpValue): number | undefined {
  // No networks: everything outside the cluster networks (0.0.0.0/0 and ::/0 minus them); the caller
  // only asks for addresses outside them.
  if (net.networks.length === 0) return 0;
  let best: number | undefined;
  for (const n of net.networks) {
    if (cidrContains(n.cidr, ip) !== true) continue;
    if (n.except.some((e) => cidrContains(e, ip) === true)) continue;
    if (best === undefined || n.cidr.prefix > best) best = n.cidr.prefix;
  }
  return best;
}

/**
 * The EgressNetwork that classifies `ip` for a client in `sourceNamespace`, or undefined (no
 * EgressNetwork applies: the address is forwarded as it is). `ip` must lie outside the cluster networks.
 */
export function classifyEgress(
  store: ResourceStore,
  ip: string,
  sourceNamespace: string,
): EgressNetworkSpec | undefined {
  const addr = parseIp(ip);
  if (!addr) return undefined;
  const local = store.inNamespace('EgressNetwork', sourceNamespace);
  const candidates = local.length > 0 ? local : store.inNamespace('EgressNetwork', store.cluster.controlPlaneNamespace);
  let best: { net: EgressNetworkSpec; length: number } | undefined;
  for (const net of candidates) {
    const length = matchLength(net, addr);
    if (length === undefined) continue;
    if (!best || length > best.length || (length === best.length && beats(net, best.net))) best = { net, length };
  }
  return best?.net;
}

/** Equally specific: the older one, then by namespace and name. */
function beats(a: EgressNetworkSpec, b: EgressNetworkSpec): boolean {
  if (a.meta.createdAt !== b.meta.createdAt) return byCreationThenName(a.meta, b.meta) < 0;
  if (a.meta.namespace !== b.meta.namespace) return a.meta.namespace < b.meta.namespace;
  return a.meta.name < b.meta.name;
}

/** What a client in `sourceNamespace` is told about traffic to `port` of an address `net` classifies. */
export function computeEgress(
  store: ResourceStore,
  net: EgressNetworkSpec,
  port: number,
  sourceNamespace: string,
): EgressPolicy {
  const { namespace, name } = net.meta;
  const attached = attachedRoutes(store, { kind: 'egress', namespace, name, port }, sourceNamespace);
  return {
    egress: { namespace, name, port, trafficPolicy: net.trafficPolicy },
    opaque: portInRanges(port, store.cluster.defaultOpaquePorts),
    httpRoutes: attached.http.map(({ kind, spec }) => toOutboundHttpRoute(store, spec, routeRef(kind, spec))),
    grpcRoutes: attached.grpc.map((r) => toOutboundGrpcRoute(store, r)),
    tlsRoutes: attached.tls.map((r) => toOutboundTlsRoute(store, r)),
    tcpRoutes: attached.tcp.map((r) => toOutboundTcpRoute(store, r)),
  };
}
