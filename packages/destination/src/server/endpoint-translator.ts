// Endpoint translator: index endpoints → proxy API messages (WeightedAddr, Update). Pure.
import { DEFAULT_PORTS, parsePortRanges, portInRanges, toIdentityName, type PortRange } from '@minimesh/config';
import { toTcpAddress, type destination } from '@minimesh/proto';
import type { Address, ResolvedEndpoint } from '../index/endpoint-index.js';
import type { PodRecord, ServiceRecord } from '../k8s/records.js';

export interface TranslatorOptions {
  controllerNamespace: string;
  identityTrustDomain: string;
  clusterDomain: string;
  defaultOpaquePorts: readonly PortRange[];
  enableH2Upgrade: boolean;
}

export const ENDPOINT_WEIGHT = 10_000;

/** An annotation's port list; an unparseable annotation counts as absent. */
export function opaquePortsOf(annotation: string | undefined): PortRange[] | undefined {
  if (annotation === undefined) return undefined;
  try {
    return parsePortRanges(`annotation ${annotation}`, annotation);
  } catch {
    return undefined;
  }
}

/** Is the target port opaque on this pod: its annotation if it has one, else the defaults. */
export function isOpaqueOnPod(pod: PodRecord | undefined, port: number, opts: TranslatorOptions): boolean {
  return portInRanges(port, opaquePortsOf(pod?.opaquePorts) ?? opts.defaultOpaquePorts);
}

/** Is the Service port opaque: the Service's annotation if it has one, else the defaults. */
export function isOpaqueOnService(service: ServiceRecord | undefined, port: number, opts: TranslatorOptions): boolean {
  return portInRanges(port, opaquePortsOf(service?.opaquePorts) ?? opts.defaultOpaquePorts);
}

/** The owner labels Linkerd emits: a ReplicaSet made by a Deployment also names the Deployment. */
export function ownerLabels(pod: PodRecord): Record<string, string> {
  const owner = pod.owner;
  if (!owner) return {};
  const kind = owner.kind.toLowerCase();
  const labels: Record<string, string> = { [kind]: owner.name };
  if (owner.kind === 'ReplicaSet' && pod.podTemplateHash && owner.name.endsWith(`-${pod.podTemplateHash}`)) {
    labels.deployment = owner.name.slice(0, -(pod.podTemplateHash.length + 1));
  }
  return labels;
}

function tlsIdentity(name: string): destination.TlsIdentity {
  return { strategy: { $case: 'dnsLikeIdentity', value: { name } }, serverName: { name } };
}

function protocolHint(opaque: boolean, opts: TranslatorOptions): destination.ProtocolHint | undefined {
  if (opaque)
    return { protocol: { $case: 'opaque', value: {} }, opaqueTransport: { inboundPort: DEFAULT_PORTS.inbound } };
  if (opts.enableH2Upgrade) return { protocol: { $case: 'h2', value: {} } };
  return undefined;
}

/**
 * One endpoint as the proxy sees it. servicePort is the port the client asked for (the Service's
 * port), used for the Service's opaque-ports annotation.
 */
export function toWeightedAddr(
  ep: ResolvedEndpoint,
  service: ServiceRecord | undefined,
  servicePort: number | undefined,
  opts: TranslatorOptions,
): destination.WeightedAddr {
  const metricLabels: Record<string, string> = {};
  const out: destination.WeightedAddr = { addr: toTcpAddress(ep.ip, ep.port), weight: ENDPOINT_WEIGHT, metricLabels };
  if (ep.zone) metricLabels.zone = ep.zone;
  const serviceOpaque =
    servicePort !== undefined && service?.opaquePorts !== undefined && isOpaqueOnService(service, servicePort, opts);
  const pod = ep.pod;
  if (pod) {
    metricLabels.pod = pod.name;
    metricLabels.namespace = pod.namespace;
    metricLabels.serviceaccount = pod.serviceAccount;
    Object.assign(metricLabels, ownerLabels(pod));
    if (pod.podTemplateHash) metricLabels.pod_template_hash = pod.podTemplateHash;
    if (pod.controlPlaneNs !== undefined) {
      metricLabels.control_plane_ns = pod.controlPlaneNs;
      const hint = protocolHint(serviceOpaque || isOpaqueOnPod(pod, ep.port, opts), opts);
      if (hint) out.protocolHint = hint;
      if (pod.controlPlaneNs === opts.controllerNamespace) {
        out.tlsIdentity = tlsIdentity(
          toIdentityName({
            serviceAccount: pod.serviceAccount,
            namespace: pod.namespace,
            controlPlaneNamespace: opts.controllerNamespace,
            trustDomain: opts.identityTrustDomain,
          }),
        );
      }
    }
  }
  const ew = ep.workload;
  if (ew) {
    metricLabels.external_workload = ew.name;
    metricLabels.namespace = ew.namespace;
    if (ew.identity !== '') {
      const hint = protocolHint(serviceOpaque || portInRanges(ep.port, opts.defaultOpaquePorts), opts);
      if (hint) out.protocolHint = hint;
      out.tlsIdentity = {
        strategy: { $case: 'dnsLikeIdentity', value: { name: ew.identity } },
        serverName: { name: ew.serverName || ew.identity },
      };
    }
  }
  return out;
}

export function toAddUpdate(
  service: ServiceRecord,
  endpoints: readonly ResolvedEndpoint[],
  servicePort: number | undefined,
  opts: TranslatorOptions,
): destination.Update {
  return {
    update: {
      $case: 'add',
      value: {
        addrs: endpoints.map((ep) => toWeightedAddr(ep, service, servicePort, opts)),
        metricLabels: { service: service.name, namespace: service.namespace },
      },
    },
  };
}

export function toRemoveUpdate(addresses: readonly Address[]): destination.Update {
  return { update: { $case: 'remove', value: { addrs: addresses.map((a) => toTcpAddress(a.ip, a.port)) } } };
}

export function toNoEndpointsUpdate(exists: boolean): destination.Update {
  return { update: { $case: 'noEndpoints', value: { exists } } };
}
