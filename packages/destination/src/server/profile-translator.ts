// Profile translator: what GetProfile answers for a service name or an IP:port, from the index. Pure.
import { portInRanges } from '@minimesh/config';
import { toTcpAddress, type destination } from '@minimesh/proto';
import type { EndpointIndex } from '../index/endpoint-index.js';
import type { ParsedAuthority } from './authority.js';
import {
  ENDPOINT_WEIGHT,
  isOpaqueOnPod,
  isOpaqueOnService,
  toWeightedAddr,
  type TranslatorOptions,
} from './endpoint-translator.js';

/** Linkerd's default retry budget: 20 % extra load, at least 10 retries/s, over a 10 s window. */
export const DEFAULT_RETRY_BUDGET: destination.RetryBudget = {
  retryRatio: 0.2,
  minRetriesPerSecond: 10,
  ttl: { seconds: 10n, nanos: 0 },
};

function emptyProfile(): destination.DestinationProfile {
  return {
    routes: [],
    retryBudget: DEFAULT_RETRY_BUDGET,
    dstOverrides: [],
    opaqueProtocol: false,
    fullyQualifiedName: '',
  };
}

export function serviceFqdn(name: string, namespace: string, clusterDomain: string): string {
  return `${name}.${namespace}.svc.${clusterDomain}`;
}

/**
 * The profile of an authority, as of now:
 * - a ClusterIP: that Service's name (the proxy then calls Get with it) and its opaque-ness;
 * - a pod IP or ExternalWorkload IP: the single endpoint with its identity and protocol hint;
 * - a Service name: its name and opaque-ness; with a hostname, that instance as the endpoint;
 * - an unknown IP: the bare address, opaque when the port is one of the default opaque ports.
 */
export function toProfile(
  index: EndpointIndex,
  target: ParsedAuthority,
  opts: TranslatorOptions,
): destination.DestinationProfile {
  const profile = emptyProfile();
  if (target.kind === 'ip') {
    const service = index.serviceByClusterIp(target.ip);
    if (service) {
      profile.fullyQualifiedName = serviceFqdn(service.name, service.namespace, opts.clusterDomain);
      profile.opaqueProtocol = isOpaqueOnService(service, target.port, opts);
      return profile;
    }
    const pod = index.podByIp(target.ip);
    if (pod) {
      profile.endpoint = toWeightedAddr({ ip: target.ip, port: target.port, pod }, undefined, undefined, opts);
      profile.opaqueProtocol = isOpaqueOnPod(pod, target.port, opts);
      return profile;
    }
    const workload = index.workloadByIp(target.ip);
    if (workload) {
      profile.endpoint = toWeightedAddr({ ip: target.ip, port: target.port, workload }, undefined, undefined, opts);
      profile.opaqueProtocol = portInRanges(target.port, opts.defaultOpaquePorts);
      return profile;
    }
    profile.endpoint = { addr: toTcpAddress(target.ip, target.port), weight: ENDPOINT_WEIGHT, metricLabels: {} };
    profile.opaqueProtocol = portInRanges(target.port, opts.defaultOpaquePorts);
    return profile;
  }
  const service = index.getService(target.namespace, target.service);
  profile.fullyQualifiedName = serviceFqdn(target.service, target.namespace, opts.clusterDomain);
  profile.opaqueProtocol = isOpaqueOnService(service, target.port, opts);
  if (target.hostname !== undefined && service) {
    const { endpoints } = index.resolve(target);
    const ep = endpoints[0];
    if (ep) profile.endpoint = toWeightedAddr(ep, service, target.port, opts);
  }
  return profile;
}
