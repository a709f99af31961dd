// Pods grouped into the workloads `viz stat` reports on, and whether each pod is meshed. Pure: the
// pods come from the API server (GET /api/v1/namespaces/<ns>/pods), as JSON.
import { CONTAINER_NAMES } from '@minimesh/config';
import type { ResourceKind } from './resource.js';

/** The parts of a Pod that viz reads. */
export interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    ownerReferences?: Array<{ kind?: string; name?: string; controller?: boolean }>;
    deletionTimestamp?: string;
  };
  spec?: {
    containers?: Array<{ name?: string }>;
    initContainers?: Array<{ name?: string }>;
    serviceAccountName?: string;
    nodeName?: string;
  };
  status?: { phase?: string; podIP?: string };
}

export interface PodInfo {
  name: string;
  namespace: string;
  /** Has the minimesh-proxy container (a native sidecar or a classic one). */
  meshed: boolean;
  /** Pending, Running, Succeeded, Failed, or Terminating. */
  status: string;
  ip: string;
  serviceAccount: string;
  /** The workloads it belongs to, by kind (deployment, replicaset, statefulset, daemonset, job). */
  owners: Partial<Record<ResourceKind, string>>;
}

export interface Workload {
  kind: ResourceKind;
  namespace: string;
  name: string;
  pods: PodInfo[];
}

export function toPodInfo(pod: PodLike): PodInfo {
  const md = pod.metadata ?? {};
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  const owners: Partial<Record<ResourceKind, string>> = {};
  const owner = (md.ownerReferences ?? []).find((o) => o.controller) ?? md.ownerReferences?.[0];
  const hash = md.labels?.['pod-template-hash'];
  switch (owner?.kind) {
    case 'ReplicaSet':
      owners.replicaset = owner.name ?? '';
      // A ReplicaSet a Deployment made is named <deployment>-<pod-template-hash> (destination's rule too).
      if (hash && owner.name?.endsWith(`-${hash}`)) owners.deployment = owner.name.slice(0, -(hash.length + 1));
      break;
    case 'StatefulSet':
      owners.statefulset = owner.name ?? '';
      break;
    case 'DaemonSet':
      owners.daemonset = owner.name ?? '';
      break;
    case 'Job':
      owners.job = owner.name ?? '';
      break;
    case undefined:
    default:
    // A bare pod, or an owner that is not a workload kind: no owner rows.
  }
  return {
    name: md.name ?? '',
    namespace: md.namespace ?? '',
    meshed: containers.some((c) => c.name === CONTAINER_NAMES.proxy),
    status: md.deletionTimestamp ? 'Terminating' : (pod.status?.phase ?? 'Unknown'),
    ip: pod.status?.podIP ?? '',
    serviceAccount: pod.spec?.serviceAccountName ?? 'default',
    owners,
  };
}

/** The workload of this kind a pod belongs to, if any. */
export function workloadName(pod: PodInfo, kind: ResourceKind): string | undefined {
  if (kind === 'pod') return pod.name;
  if (kind === 'namespace') return pod.namespace;
  return pod.owners[kind];
}

/** Pods that count for MESHED: not finished (Succeeded/Failed), as Linkerd counts them. */
export function isCounted(pod: PodInfo): boolean {
  return pod.status !== 'Succeeded' && pod.status !== 'Failed';
}

/** Workloads of one kind, sorted by namespace and name; a name limits it to that one. */
export function groupWorkloads(pods: readonly PodInfo[], kind: ResourceKind, name = ''): Workload[] {
  const byKey = new Map<string, Workload>();
  for (const pod of pods) {
    const w = workloadName(pod, kind);
    if (w === undefined || (name !== '' && w !== name)) continue;
    const key = `${pod.namespace}/${w}`;
    let wl = byKey.get(key);
    if (!wl) byKey.set(key, (wl = { kind, namespace: pod.namespace, name: w, pods: [] }));
    wl.pods.push(pod);
  }
  return [...byKey.values()].sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
}
