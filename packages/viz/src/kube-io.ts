// How viz reaches the cluster: the API server (pods, workloads, namespaces, the minimesh-viz
// ConfigMap), and through the API server's service proxy Prometheus and the tap service, so that no
// port-forward is needed. `VizKube` is the part of @minimesh/kube's KubeClient viz uses.
import { CONTAINER_NAMES } from '@minimesh/config';
import { VizError } from './errors.js';
import { createPrometheusClient, type PrometheusClient } from './prometheus.js';
import type { Resource, ResourceKind } from './resource.js';
import type { PodLike } from './workloads.js';

export interface VizKube {
  request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    opts?: { timeoutMs?: number; accept?: string; signal?: AbortSignal },
  ): Promise<{ status: number; body: T }>;
  watch(
    path: string,
    query: { timeoutSeconds?: number },
    onEvent: (type: string, object: unknown) => void,
    opts?: { signal?: AbortSignal },
  ): Promise<'ended' | 'aborted'>;
}

/** A Kubernetes Status body's message, when the body is one. */
export function statusMessageOf(body: unknown): string | undefined {
  const b = body as { kind?: string; message?: string } | undefined;
  return b && typeof b === 'object' && b.kind === 'Status' && typeof b.message === 'string' ? b.message : undefined;
}

async function getJson<T>(kube: VizKube, path: string, what: string): Promise<T | undefined> {
  let res: { status: number; body: T };
  try {
    res = await kube.request<T>('GET', path, undefined, { timeoutMs: 15_000 });
  } catch (err) {
    throw new VizError('MINIMESH_VIZ_KUBE', `the API server: ${(err as Error).message}`, { cause: err });
  }
  if (res.status === 404) return undefined;
  if (res.status < 200 || res.status > 299)
    throw new VizError(
      'MINIMESH_VIZ_KUBE',
      `reading ${what}: HTTP ${res.status}: ${statusMessageOf(res.body) ?? JSON.stringify(res.body).slice(0, 200)}`,
    );
  return res.body;
}

const API_PATH: Record<Exclude<ResourceKind, 'namespace'>, string> = {
  deployment: '/apis/apps/v1/namespaces/{ns}/deployments',
  statefulset: '/apis/apps/v1/namespaces/{ns}/statefulsets',
  daemonset: '/apis/apps/v1/namespaces/{ns}/daemonsets',
  replicaset: '/apis/apps/v1/namespaces/{ns}/replicasets',
  job: '/apis/batch/v1/namespaces/{ns}/jobs',
  pod: '/api/v1/namespaces/{ns}/pods',
};

/** Fails with one line when the namespace does not exist. */
export async function requireNamespace(kube: VizKube, namespace: string): Promise<void> {
  const ns = await getJson(kube, `/api/v1/namespaces/${encodeURIComponent(namespace)}`, `namespace ${namespace}`);
  if (!ns) throw new VizError('MINIMESH_VIZ_NOT_FOUND', `namespace "${namespace}" not found`);
}

export async function listNamespaces(kube: VizKube): Promise<string[]> {
  const list = await getJson<{ items?: Array<{ metadata?: { name?: string } }> }>(
    kube,
    '/api/v1/namespaces',
    'namespaces',
  );
  return (list?.items ?? []).map((n) => n.metadata?.name ?? '').filter(Boolean);
}

/** Fails with one line when the named resource does not exist in its namespace. */
export async function requireResource(kube: VizKube, r: Resource): Promise<void> {
  if (r.name === '') return;
  if (r.kind === 'namespace') return requireNamespace(kube, r.name);
  await requireNamespace(kube, r.namespace);
  const path = `${API_PATH[r.kind].replace('{ns}', encodeURIComponent(r.namespace))}/${encodeURIComponent(r.name)}`;
  const obj = await getJson(kube, path, `${r.kind} ${r.namespace}/${r.name}`);
  if (!obj)
    throw new VizError('MINIMESH_VIZ_NOT_FOUND', `${r.kind} "${r.name}" not found in namespace "${r.namespace}"`);
}

/** Names of the objects of a kind (a Deployment scaled to zero has no pods but is a row). */
export async function listResourceNames(
  kube: VizKube,
  kind: ResourceKind,
  namespace: string,
): Promise<Array<{ namespace: string; name: string }>> {
  if (kind === 'namespace') return (await listNamespaces(kube)).map((name) => ({ namespace: name, name }));
  const path =
    namespace === ''
      ? API_PATH[kind].replace('/namespaces/{ns}', '')
      : API_PATH[kind].replace('{ns}', encodeURIComponent(namespace));
  const list = await getJson<{ items?: Array<{ metadata?: { name?: string; namespace?: string } }> }>(
    kube,
    path,
    `${kind}s`,
  );
  return (list?.items ?? []).map((o) => ({ namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' }));
}

/** Pods of a namespace, or of every namespace (''). */
export async function listPods(kube: VizKube, namespace: string): Promise<PodLike[]> {
  const path = namespace === '' ? '/api/v1/pods' : `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
  const list = await getJson<{ items?: PodLike[] }>(kube, path, 'pods');
  return list?.items ?? [];
}

export async function getPod(kube: VizKube, namespace: string, name: string): Promise<PodLike> {
  const pod = await getJson<PodLike>(
    kube,
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`,
    `pod ${namespace}/${name}`,
  );
  if (!pod) {
    await requireNamespace(kube, namespace);
    throw new VizError('MINIMESH_VIZ_NOT_FOUND', `pod "${name}" not found in namespace "${namespace}"`);
  }
  return pod;
}

export function hasProxy(pod: PodLike): boolean {
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].some(
    (c) => c.name === CONTAINER_NAMES.proxy,
  );
}

/** `GET .../pods/<pod>:<port>/proxy<path>` of the API server: a pod's port without exec or port-forward. */
export function podProxyPath(namespace: string, pod: string, port: number, path: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}:${port}/proxy${path}`;
}

/** `GET .../services/<name>:<port>/proxy<path>` of the API server. */
export function serviceProxyPath(namespace: string, service: string, port: number, path: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(service)}:${port}/proxy${path}`;
}

/** A Service of this cluster named by a URL (http://<svc>.<ns>.svc[.<domain>]:<port>), else undefined. */
export function parseServiceUrl(
  url: string,
): { service: string; namespace: string; port: number; base: string } | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const m = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc(\..+)?$/.exec(u.hostname);
  if (!m || u.protocol !== 'http:') return undefined;
  const port = u.port === '' ? 80 : Number(u.port);
  return { service: m[1] ?? '', namespace: m[2] ?? '', port, base: u.pathname.replace(/\/$/, '') };
}

export interface VizConfig {
  prometheusUrl: string;
  tapUrl: string;
  tapIdentity: string;
}

/** The minimesh-viz ConfigMap the chart renders when viz is enabled. */
export async function readVizConfig(kube: VizKube, controlPlaneNamespace: string): Promise<VizConfig> {
  const cm = await getJson<{ data?: Record<string, string> }>(
    kube,
    `/api/v1/namespaces/${encodeURIComponent(controlPlaneNamespace)}/configmaps/minimesh-viz`,
    'the minimesh-viz ConfigMap',
  );
  if (!cm)
    throw new VizError(
      'MINIMESH_VIZ_NOT_INSTALLED',
      `viz is not installed in namespace "${controlPlaneNamespace}" (no ConfigMap minimesh-viz): helm upgrade minimesh charts/minimesh -n ${controlPlaneNamespace} --reset-then-reuse-values --set viz.enabled=true`,
    );
  return {
    prometheusUrl: cm.data?.prometheusUrl ?? '',
    tapUrl: cm.data?.tapUrl ?? '',
    tapIdentity: cm.data?.tapIdentity ?? '',
  };
}

/**
 * A Prometheus client for a URL: a Service of this cluster through the API server's service proxy,
 * anything else asked directly.
 */
export function prometheusAt(kube: VizKube, url: string): PrometheusClient {
  const svc = parseServiceUrl(url);
  if (svc) {
    const where = `service ${svc.namespace}/${svc.service}:${svc.port} (through the API server)`;
    return createPrometheusClient(where, async (path) => {
      const res = await kube.request<unknown>(
        'GET',
        serviceProxyPath(svc.namespace, svc.service, svc.port, `${svc.base}${path}`),
        undefined,
        {
          timeoutMs: 15_000,
          accept: 'application/json',
        },
      );
      // The API server answers for a Service with no ready endpoint (503) or a refused connection (502/503).
      const status = statusMessageOf(res.body);
      if (status !== undefined && res.status >= 500) throw new Error(status);
      return { status: res.status, body: typeof res.body === 'string' ? res.body : JSON.stringify(res.body) };
    });
  }
  const base = url.replace(/\/$/, '');
  return createPrometheusClient(base, async (path) => {
    const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(15_000) });
    return { status: res.status, body: await res.text() };
  });
}
