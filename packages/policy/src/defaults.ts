// Linkerd's default policies: what a port admits when no Server selects it (and what a Server's
// accessPolicy adds). all-* admit every network, cluster-* only the cluster networks; *-authenticated
// require mesh TLS with any identity; deny admits nobody; audit admits everyone, flagged.
import { DEFAULT_POLICIES, type ClientAuthorization, type DefaultPolicyName } from './model.js';
import type { ClusterInfo } from './cluster-info.js';

export const ALL_NETWORKS = ['0.0.0.0/0', '::/0'];

export function isDefaultPolicy(value: string): value is DefaultPolicyName {
  return (DEFAULT_POLICIES as readonly string[]).includes(value);
}

/** Parses a default-policy name; undefined when it is not one. */
export function parseDefaultPolicy(value: string | undefined): DefaultPolicyName | undefined {
  const v = value?.trim();
  return v !== undefined && isDefaultPolicy(v) ? v : undefined;
}

/** A default policy with authentication required (config.minimesh.io/proxy-require-identity-inbound-ports). */
export function requireIdentity(policy: DefaultPolicyName): DefaultPolicyName {
  if (policy === 'all-unauthenticated') return 'all-authenticated';
  if (policy === 'cluster-unauthenticated') return 'cluster-authenticated';
  return policy;
}

/** The authorizations a default policy grants, named after it. */
export function defaultAuthorizations(
  policy: DefaultPolicyName,
  cluster: Pick<ClusterInfo, 'networks'>,
): ClientAuthorization[] {
  if (policy === 'deny') return [];
  const authenticated = policy === 'all-authenticated' || policy === 'cluster-authenticated';
  const clusterOnly = policy === 'cluster-authenticated' || policy === 'cluster-unauthenticated';
  const networks = (clusterOnly ? cluster.networks : ALL_NETWORKS).map((net) => ({ net, except: [] }));
  return [
    {
      ref: { kind: 'default', name: policy },
      networks,
      authentication: authenticated
        ? { kind: 'tls-authenticated', identities: [], suffixes: [[]] }
        : { kind: 'unauthenticated' },
    },
  ];
}
