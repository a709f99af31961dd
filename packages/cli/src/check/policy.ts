// `minimesh check`, the policy part: the policy.minimesh.io CRDs are installed and established; the
// policy controller runs in every destination pod and is ready; and the policy resources in the
// cluster are usable — malformed ones, AuthorizationPolicies whose target does not exist, Servers that
// select no pod, and ports two Servers claim are reported, each as Linkerd's controller would treat it.
// The check is pure (fetched objects in, results out); its read is beside it, at the end of the file.
import type { KubeClient } from '@minimesh/kube';
import {
  POLICY_GROUP,
  POLICY_PORTS,
  PolicyIndex,
  policyCrds,
  serverPorts,
  serverSelects,
  serversForPort,
  type ClusterInfo,
  type IndexedKind,
} from '@minimesh/policy';
import { describeKubeError } from '../kube.js';
import { clusterInfoFromArgs, loadPolicyState } from '../policy-cluster.js';
import { firstLine, getPodReady, type PodList } from './api-reads.js';
import { fail, ok, warn, type CheckResult } from './types.js';

export const POLICY_CATEGORY = 'minimesh-policy';

export interface CrdLike {
  metadata?: { name?: string };
  spec?: { versions?: Array<{ name: string; served?: boolean; storage?: boolean }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

export interface PodLike {
  metadata?: { name?: string };
  status?: { containerStatuses?: Array<{ name: string; ready: boolean; restartCount?: number }> };
}

export interface PolicyCheckInput {
  crds: readonly CrdLike[];
  /** The destination pods (the policy controller is their "policy" container). */
  destinationPods: readonly PodLike[];
  /** /ready of each pod's policy admin port, through the API server's pod proxy. */
  ready: ReadonlyMap<string, { ok: boolean; detail?: string }>;
  /** The cluster's objects by kind (Pods, Services, the policy kinds); undefined: could not be listed. */
  objects?: Partial<Record<IndexedKind, readonly unknown[]>>;
  cluster: ClusterInfo;
}

export function checkPolicy(input: PolicyCheckInput): CheckResult[] {
  const results: CheckResult[] = [];
  const byName = new Map(input.crds.map((c) => [c.metadata?.name ?? '', c]));
  for (const want of policyCrds()) {
    const name = want.metadata.name;
    const desc = `CRD ${name} is installed`;
    const have = byName.get(name);
    if (!have) {
      results.push(
        fail(
          POLICY_CATEGORY,
          desc,
          'not found',
          'install the CRDs first: helm install minimesh-crds charts/minimesh-crds -n <ns>',
        ),
      );
      continue;
    }
    const established = have.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    const versions = (want.spec as { versions: Array<{ name: string }> }).versions.map((v) => v.name);
    const served = new Set((have.spec?.versions ?? []).filter((v) => v.served !== false).map((v) => v.name));
    const missing = versions.filter((v) => !served.has(v));
    if (!established) results.push({ ...fail(POLICY_CATEGORY, desc, 'not Established yet'), retry: true });
    else if (missing.length)
      results.push(
        warn(
          POLICY_CATEGORY,
          desc,
          `does not serve ${missing.join(', ')}: an older CRD?`,
          'upgrade the CRDs: helm upgrade minimesh-crds charts/minimesh-crds -n <ns>',
        ),
      );
    else results.push(ok(POLICY_CATEGORY, desc));
  }

  if (input.destinationPods.length === 0)
    results.push(fail(POLICY_CATEGORY, 'the policy controller runs', 'no destination pod found'));
  for (const p of input.destinationPods) {
    const pod = p.metadata?.name ?? '?';
    const c = p.status?.containerStatuses?.find((s) => s.name === 'policy');
    const desc = `policy controller in ${pod} is ready`;
    if (!c) {
      results.push(
        fail(POLICY_CATEGORY, desc, 'the pod has no "policy" container: an older chart?', 'upgrade the chart'),
      );
      continue;
    }
    const r = input.ready.get(pod);
    if (!c.ready || (r && !r.ok))
      results.push({
        ...fail(
          POLICY_CATEGORY,
          desc,
          r?.detail ?? `container not ready${c.restartCount ? ` (${c.restartCount} restarts)` : ''}`,
          `kubectl logs ${pod} -c policy`,
        ),
        retry: true,
      });
    else results.push(ok(POLICY_CATEGORY, desc));
  }

  if (!input.objects) return results;
  const index = new PolicyIndex(input.cluster);
  for (const [kind, items] of Object.entries(input.objects) as Array<[IndexedKind, readonly unknown[]]>)
    index.reset(kind, items);
  const invalid = index.store.invalid();
  results.push(
    invalid.length
      ? warn(
          POLICY_CATEGORY,
          'policy resources are well-formed',
          invalid.map((i) => i.message).join('; '),
          'they have no effect until fixed',
        )
      : ok(POLICY_CATEGORY, 'policy resources are well-formed', `${countPolicies(index)} resource(s)`),
  );

  const notes: string[] = [];
  const pods = index.store.all('Pod');
  for (const ap of index.store.all('AuthorizationPolicy')) {
    const t = ap.target;
    const kind = t.kind === 'server' ? 'Server' : t.kind === 'httproute' ? 'HTTPRoute' : undefined;
    if (kind && !index.store.get(kind, ap.meta.namespace, t.name))
      notes.push(
        `AuthorizationPolicy ${ap.meta.namespace}/${ap.meta.name}: its target ${kind} ${t.name} does not exist (it admits nobody to anything)`,
      );
  }
  for (const s of index.store.all('Server')) {
    const selected = pods.filter((p) => p.namespace === s.meta.namespace && serverSelects(s, p));
    if (s.selector.kind === 'pod' && selected.length === 0)
      notes.push(`Server ${s.meta.namespace}/${s.meta.name} selects no pod`);
    for (const p of selected)
      for (const port of serverPorts(s, p)) {
        const [winner] = serversForPort(index.store, p, port);
        if (winner && winner.meta.name !== s.meta.name)
          notes.push(
            `Server ${s.meta.namespace}/${s.meta.name} and ${winner.meta.name} both select port ${port} of pod ${p.name}: ${winner.meta.name} (the older) wins`,
          );
      }
  }
  const unique = [...new Set(notes)];
  results.push(
    unique.length
      ? warn(POLICY_CATEGORY, 'policy resources are consistent', unique.join('; '))
      : ok(POLICY_CATEGORY, 'policy resources are consistent'),
  );
  return results;
}

function countPolicies(index: PolicyIndex): number {
  return (
    ['Server', 'AuthorizationPolicy', 'MeshTLSAuthentication', 'NetworkAuthentication', 'HTTPRoute'] as const
  ).reduce((n, k) => n + index.store.count(k), 0);
}

// --- The read (thin I/O) ---

/** The policy controller's part: its CRDs, its container in each destination pod, and (withResources) the policy resources. */
export async function policyChecks(
  client: KubeClient,
  namespace: string,
  timeoutMs: number,
  withResources: boolean,
): Promise<CheckResult[]> {
  let crds: CrdLike[];
  let pods: PodList['items'];
  try {
    const list = await client.requestOk<{ items?: CrdLike[] }>(
      'GET',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    );
    crds = (list.items ?? []).filter((c) => c.metadata?.name?.endsWith(`.${POLICY_GROUP}`));
    const selector = encodeURIComponent('minimesh.io/control-plane-component=destination');
    pods = (
      await client.requestOk<PodList>('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}`)
    ).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
  } catch (err) {
    return [fail(POLICY_CATEGORY, 'policy CRDs and controller are readable', describeKubeError(err))];
  }
  const ready = new Map<string, { ok: boolean; detail?: string }>();
  await Promise.all(
    pods.map(async (p) => {
      const name = p.metadata?.name ?? '?';
      const r = await getPodReady(client, namespace, name, POLICY_PORTS.admin, timeoutMs);
      ready.set(
        name,
        r.status === 200
          ? { ok: true }
          : {
              ok: false,
              detail: r.error ?? `/ready on port ${POLICY_PORTS.admin} answered HTTP ${r.status}: ${firstLine(r.body)}`,
            },
      );
    }),
  );
  // The resources themselves (malformed, dangling, conflicting) only with --policy-resources: as with
  // `linkerd check`, a plain check is about the installation, not about what users have applied.
  if (!withResources)
    return checkPolicy({
      crds,
      destinationPods: pods as PodLike[],
      ready,
      cluster: clusterInfoFromArgs([], namespace),
    });
  const state = await loadPolicyState(client, { controlPlaneNamespace: namespace });
  const results = checkPolicy({
    crds,
    destinationPods: pods as PodLike[],
    ready,
    objects: state.objects,
    cluster: state.cluster,
  });
  for (const n of state.notes) results.push(warn(POLICY_CATEGORY, 'policy resources are readable', n));
  return results;
}
