// The resources the policy controller reads: API group, kinds, versions (as Linkerd serves its own
// policy.linkerd.io kinds, and the Gateway API's routes in mesh mode), plural names for the API paths.
export const POLICY_GROUP = 'policy.minimesh.io';
/**
 * The Gateway API (sigs.k8s.io/gateway-api): HTTPRoute and GRPCRoute v1 with Service parents (GAMMA),
 * and they and TLSRoute and TCPRoute v1 with EgressNetwork parents.
 */
export const GATEWAY_GROUP = 'gateway.networking.k8s.io';

export interface ResourceKindInfo {
  group: string;
  kind: string;
  plural: string;
  /** The version the controller lists and watches (the storage version). */
  version: string;
}

export const RESOURCE_KINDS = {
  Server: { group: POLICY_GROUP, kind: 'Server', plural: 'servers', version: 'v1beta3' },
  AuthorizationPolicy: {
    group: POLICY_GROUP,
    kind: 'AuthorizationPolicy',
    plural: 'authorizationpolicies',
    version: 'v1alpha1',
  },
  MeshTLSAuthentication: {
    group: POLICY_GROUP,
    kind: 'MeshTLSAuthentication',
    plural: 'meshtlsauthentications',
    version: 'v1alpha1',
  },
  NetworkAuthentication: {
    group: POLICY_GROUP,
    kind: 'NetworkAuthentication',
    plural: 'networkauthentications',
    version: 'v1alpha1',
  },
  HTTPRoute: { group: POLICY_GROUP, kind: 'HTTPRoute', plural: 'httproutes', version: 'v1beta3' },
  HTTPLocalRateLimitPolicy: {
    group: POLICY_GROUP,
    kind: 'HTTPLocalRateLimitPolicy',
    plural: 'httplocalratelimitpolicies',
    version: 'v1alpha1',
  },
  EgressNetwork: { group: POLICY_GROUP, kind: 'EgressNetwork', plural: 'egressnetworks', version: 'v1alpha1' },
  GatewayHTTPRoute: { group: GATEWAY_GROUP, kind: 'HTTPRoute', plural: 'httproutes', version: 'v1' },
  GRPCRoute: { group: GATEWAY_GROUP, kind: 'GRPCRoute', plural: 'grpcroutes', version: 'v1' },
  // v1: the standard channel of v1.6.3 serves only it (the experimental channel's TCPRoute also v1alpha2).
  TLSRoute: { group: GATEWAY_GROUP, kind: 'TLSRoute', plural: 'tlsroutes', version: 'v1' },
  TCPRoute: { group: GATEWAY_GROUP, kind: 'TCPRoute', plural: 'tcproutes', version: 'v1' },
  Pod: { group: '', kind: 'Pod', plural: 'pods', version: 'v1' },
  Service: { group: '', kind: 'Service', plural: 'services', version: 'v1' },
} as const satisfies Record<string, ResourceKindInfo>;

export type PolicyResourceKind = keyof typeof RESOURCE_KINDS;

/** The API path listing a kind across namespaces, e.g. /apis/policy.minimesh.io/v1beta3/servers. */
export function resourcePath(kind: PolicyResourceKind): string {
  const k: ResourceKindInfo = RESOURCE_KINDS[kind];
  return k.group ? `/apis/${k.group}/${k.version}/${k.plural}` : `/api/${k.version}/${k.plural}`;
}

/** Whether a reference's (group, kind) names the given kind; "" and "core" both mean the core group. */
export function refersTo(ref: { group?: string | undefined; kind: string }, group: string, kind: string): boolean {
  const g = (ref.group ?? '').toLowerCase();
  const want = group.toLowerCase();
  const groupOk = want === '' ? g === '' || g === 'core' : g === want;
  return groupOk && ref.kind.toLowerCase() === kind.toLowerCase();
}

/** "policy.minimesh.io/Server" or "core/ServiceAccount", for messages. */
export function canonicalKind(ref: { group?: string | undefined; kind: string }): string {
  return `${ref.group || 'core'}/${ref.kind}`;
}
