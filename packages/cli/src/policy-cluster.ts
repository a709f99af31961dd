// The cluster's policy state for `minimesh authz`, `explain` and `check`: the objects the policy
// controller watches, read once through the API server into the controller's own index, with the
// controller's settings taken from its container's flags (so the answers are the controller's).
import type { KubeClient } from '@minimesh/kube';
import { parseCidrList, parseDuration, parsePortRanges } from '@minimesh/config';
import {
  DEFAULT_CLUSTER_NETWORKS,
  PolicyIndex,
  RESOURCE_KINDS,
  parseDefaultPolicy,
  resourcePath,
  type ClusterInfo,
  type IndexedKind,
} from '@minimesh/policy';
import { describeKubeError, kubeStatus } from './kube.js';

/** The Deployment that runs the policy controller (its "policy" container). */
export const POLICY_DEPLOYMENT = 'minimesh-destination';
export const POLICY_CONTAINER = 'policy';

export interface DeploymentLike {
  spec?: { template?: { spec?: { containers?: Array<{ name: string; args?: string[] }> } } };
}

/** The controller's settings from its flags (--name=value or --name value); defaults for what is not given. */
export function clusterInfoFromArgs(args: readonly string[], controlPlaneNamespace: string): ClusterInfo {
  const flag = (name: string): string | undefined => {
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as string;
      if (a === `--${name}`) return args[i + 1];
      if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
    }
    return undefined;
  };
  const cidrs = (name: string, fallback: string[]): string[] => {
    const v = flag(name);
    if (v === undefined) return fallback;
    return parseCidrList(`--${name}`, v).map((c) => `${c.address}/${c.prefix}`);
  };
  const defaultPolicy = flag('default-policy');
  return {
    networks: cidrs('cluster-networks', DEFAULT_CLUSTER_NETWORKS),
    controlPlaneNamespace: flag('controller-namespace') ?? controlPlaneNamespace,
    clusterDomain: flag('cluster-domain') ?? 'cluster.local',
    identityDomain: flag('identity-trust-domain') ?? 'cluster.local',
    defaultPolicy: parseDefaultPolicy(defaultPolicy) ?? 'all-unauthenticated',
    defaultDetectTimeoutMs: parseDuration('--detect-timeout', flag('detect-timeout') ?? '10s'),
    defaultOpaquePorts: parsePortRanges(
      '--default-opaque-ports',
      flag('default-opaque-ports') ?? '25,587,3306,4444,5432,6379,9300,11211',
    ),
    probeNetworks: cidrs('probe-networks', ['0.0.0.0/0', '::/0']),
  };
}

export interface PolicyState {
  index: PolicyIndex;
  cluster: ClusterInfo;
  /** What could not be read, in words (the answers may be incomplete). */
  notes: string[];
  /** Objects the index refused (malformed), as "Kind ns/name: why". */
  invalid: string[];
  /** What was read, by kind (a kind that could not be listed is absent). */
  objects: Partial<Record<IndexedKind, unknown[]>>;
}

const KINDS: Array<{ kind: IndexedKind; path: string; namespaced: boolean }> = [
  { kind: 'Pod', path: '/api/v1/pods', namespaced: true },
  { kind: 'Service', path: '/api/v1/services', namespaced: false },
  ...(
    [
      'Server',
      'AuthorizationPolicy',
      'MeshTLSAuthentication',
      'NetworkAuthentication',
      'HTTPRoute',
      'HTTPLocalRateLimitPolicy',
      'EgressNetwork',
    ] as const
  ).map((kind) => ({ kind, path: resourcePath(kind), namespaced: false })),
];

/**
 * Reads the policy state: the controller's flags from its Deployment, then pods (of `namespace`, or
 * all), Services and the policy kinds (all namespaces: authentications may be referenced across).
 */
export async function loadPolicyState(
  client: KubeClient,
  opts: { controlPlaneNamespace: string; namespace?: string },
): Promise<PolicyState> {
  const notes: string[] = [];
  let cluster: ClusterInfo = clusterInfoFromArgs([], opts.controlPlaneNamespace);
  try {
    const d = await client.get<DeploymentLike>(
      `/apis/apps/v1/namespaces/${opts.controlPlaneNamespace}/deployments/${POLICY_DEPLOYMENT}`,
    );
    const c = d?.spec?.template?.spec?.containers?.find((x) => x.name === POLICY_CONTAINER);
    if (c) cluster = clusterInfoFromArgs(c.args ?? [], opts.controlPlaneNamespace);
    else
      notes.push(
        `no policy controller in ${opts.controlPlaneNamespace}/${POLICY_DEPLOYMENT}: assuming the default settings (default policy all-unauthenticated)`,
      );
  } catch (err) {
    notes.push(`cannot read the policy controller's settings: ${describeKubeError(err)}; assuming the defaults`);
  }
  const index = new PolicyIndex(cluster);
  const objects: Partial<Record<IndexedKind, unknown[]>> = {};
  for (const k of KINDS) {
    const path =
      k.namespaced && opts.namespace ? k.path.replace('/api/v1/', `/api/v1/namespaces/${opts.namespace}/`) : k.path;
    try {
      const list = await client.requestOk<{ items?: unknown[] }>('GET', path);
      // List items carry neither kind nor apiVersion: the list's version is the path's.
      const apiVersion = k.path.startsWith('/apis/') ? k.path.split('/').slice(2, 4).join('/') : 'v1';
      const items = (list.items ?? []).map((o) => ({ kind: k.kind, apiVersion, ...(o as object) }));
      objects[k.kind] = items;
      index.reset(k.kind, items);
    } catch (err) {
      if (kubeStatus(err) === 404 && k.kind !== 'Pod' && k.kind !== 'Service') {
        notes.push(`${RESOURCE_KINDS[k.kind as keyof typeof RESOURCE_KINDS].plural}: the CRD is not installed`);
        continue;
      }
      notes.push(`cannot list ${k.kind} objects: ${describeKubeError(err)}`);
    }
  }
  const invalid = index.store.invalid().map((i) => `${i.kind} ${i.namespace}/${i.name}: ${i.message}`);
  return { index, cluster, notes, invalid, objects };
}
