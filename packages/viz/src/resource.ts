// Kubernetes resources as `minimesh viz` names them: `deploy`, `deploy/web`, `po/web-7d9`, `ns/shop`.
// Pure: parsing, the Prometheus label that carries each kind, and how a name is printed.
export type ResourceKind = 'namespace' | 'deployment' | 'statefulset' | 'daemonset' | 'replicaset' | 'job' | 'pod';

export interface Resource {
  kind: ResourceKind;
  /** Empty: every resource of the kind. */
  name: string;
  /** Empty: the namespace of the command (-n). */
  namespace: string;
}

export class ResourceError extends Error {
  readonly code = 'MINIMESH_VIZ_BAD_RESOURCE';
}

const ALIASES: Record<string, ResourceKind> = {
  ns: 'namespace',
  namespace: 'namespace',
  namespaces: 'namespace',
  deploy: 'deployment',
  deployment: 'deployment',
  deployments: 'deployment',
  sts: 'statefulset',
  statefulset: 'statefulset',
  statefulsets: 'statefulset',
  ds: 'daemonset',
  daemonset: 'daemonset',
  daemonsets: 'daemonset',
  rs: 'replicaset',
  replicaset: 'replicaset',
  replicasets: 'replicaset',
  job: 'job',
  jobs: 'job',
  po: 'pod',
  pod: 'pod',
  pods: 'pod',
};

export const RESOURCE_KINDS: readonly ResourceKind[] = [
  'namespace',
  'deployment',
  'statefulset',
  'daemonset',
  'replicaset',
  'job',
  'pod',
];

const SHORT: Record<ResourceKind, string> = {
  namespace: 'ns',
  deployment: 'deploy',
  statefulset: 'sts',
  daemonset: 'ds',
  replicaset: 'rs',
  job: 'job',
  pod: 'po',
};

/** The label of a proxy's own series that names its workload (Linkerd's viz Prometheus labels). */
const INBOUND_LABEL: Record<ResourceKind, string> = {
  namespace: 'namespace',
  deployment: 'deployment',
  statefulset: 'statefulset',
  daemonset: 'daemonset',
  replicaset: 'replicaset',
  // Prometheus keeps `job` for its scrape job: Linkerd's viz relabels the Kubernetes Job to k8s_job.
  job: 'k8s_job',
  pod: 'pod',
};

/** The label an outbound series carries for its destination (destination's metric_labels, prefixed dst_). */
const OUTBOUND_LABEL: Record<ResourceKind, string> = {
  namespace: 'dst_namespace',
  deployment: 'dst_deployment',
  statefulset: 'dst_statefulset',
  daemonset: 'dst_daemonset',
  replicaset: 'dst_replicaset',
  job: 'dst_job',
  pod: 'dst_pod',
};

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * `kind`, `kind/name` or (two arguments) `kind name`. Kinds take kubectl's short names and plurals.
 * Throws ResourceError naming what was wrong and what is expected.
 */
export function parseResource(text: string, name?: string): Resource {
  const slash = text.indexOf('/');
  const kindText = (slash === -1 ? text : text.slice(0, slash)).toLowerCase();
  const nameText = slash === -1 ? (name ?? '') : text.slice(slash + 1);
  if (slash !== -1 && name !== undefined)
    throw new ResourceError(`"${text} ${name}": give the resource as kind/name or as kind name, not both`);
  const kind = ALIASES[kindText];
  if (!kind)
    throw new ResourceError(
      `"${text}" is not a resource kind: expected one of ${RESOURCE_KINDS.join(', ')} (or deploy, sts, ds, rs, po, ns), optionally /<name>`,
    );
  if (nameText !== '' && !NAME.test(nameText))
    throw new ResourceError(`"${nameText}" is not a valid ${kind} name (lower-case letters, digits, '-' and '.')`);
  if (slash !== -1 && nameText === '') throw new ResourceError(`"${text}": the name after "/" is empty`);
  return { kind, name: nameText, namespace: '' };
}

/** The label that names this kind on the series of a workload's own proxies. */
export function inboundLabel(kind: ResourceKind): string {
  return INBOUND_LABEL[kind];
}

/** The label that names this kind as the destination of an outbound series. */
export function outboundLabel(kind: ResourceKind): string {
  return OUTBOUND_LABEL[kind];
}

/** `deploy/web`, as kubectl and Linkerd print it. */
export function formatResource(r: Pick<Resource, 'kind' | 'name'>): string {
  return r.name === '' ? SHORT[r.kind] : `${SHORT[r.kind]}/${r.name}`;
}
