// What the policy controller knows about the cluster it serves (from its flags).
import type { PortRange } from '@minimesh/config';
import type { DefaultPolicyName } from './model.js';

export interface ClusterInfo {
  /** Pod and service networks: what "cluster-*" default policies admit. */
  networks: string[];
  controlPlaneNamespace: string;
  /** "cluster.local": Services are <name>.<namespace>.svc.<clusterDomain>. */
  clusterDomain: string;
  /** Trust domain of mesh identities. */
  identityDomain: string;
  /** Cluster-wide default policy (proxy.defaultInboundPolicy). */
  defaultPolicy: DefaultPolicyName;
  /** Protocol-detection timeout of default servers. */
  defaultDetectTimeoutMs: number;
  /** Ports treated as opaque unless a pod or Service annotation says otherwise. */
  defaultOpaquePorts: readonly PortRange[];
  /** Where kubelet probes come from: probe routes admit them unauthenticated. Empty: no probe routes. */
  probeNetworks: string[];
}

/** Linkerd's policy controller ports: gRPC 8090, admin 9990. */
export const POLICY_PORTS = { grpc: 8090, admin: 9990 } as const;

export const DEFAULT_CLUSTER_NETWORKS = ['10.0.0.0/8', '100.64.0.0/10', '172.16.0.0/12', '192.168.0.0/16', 'fd00::/8'];

/** The mesh identity of a service account: <sa>.<ns>.serviceaccount.identity.<cp-ns>.<trust-domain>. */
export function serviceAccountIdentity(cluster: ClusterInfo, namespace: string, serviceAccount: string): string {
  return `${serviceAccount}.${namespace}.serviceaccount.identity.${cluster.controlPlaneNamespace}.${cluster.identityDomain}`;
}

/** Every identity of a namespace, as a suffix: *.<ns>.serviceaccount.identity.<cp-ns>.<trust-domain>. */
export function namespaceIdentity(cluster: ClusterInfo, namespace: string): string {
  return `*.${namespace}.serviceaccount.identity.${cluster.controlPlaneNamespace}.${cluster.identityDomain}`;
}

/** <name>.<namespace>.svc.<cluster-domain>:<port> */
export function serviceAuthority(cluster: ClusterInfo, namespace: string, name: string, port: number): string {
  return `${name}.${namespace}.svc.${cluster.clusterDomain}:${port}`;
}
