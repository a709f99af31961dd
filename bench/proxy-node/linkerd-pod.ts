// Run B's pods: linkerd2-proxy in place of the minimesh-proxy sidecar of run A's injected pod.
import type { K8sObject } from '../../e2e/src/chart.js';

export const APP = 'app';
export const PROXY_CONTAINER = { minimesh: 'minimesh-proxy', linkerd: 'linkerd-proxy' } as const;

export type PodTemplate = InjectedPod;
export interface InjectedPod {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: {
    initContainers?: Record<string, unknown>[];
    containers: Record<string, unknown>[];
    volumes?: Record<string, unknown>[];
    securityContext?: Record<string, unknown>;
    serviceAccountName?: string;
  } & Record<string, unknown>;
  status: { initContainerStatuses?: { name: string; image?: string; imageID?: string }[] };
}

const stripApiAccess = (c: Record<string, unknown>): Record<string, unknown> => {
  const mounts = (c.volumeMounts as { name: string }[] | undefined)?.filter(
    (v) => !v.name.startsWith('kube-api-access'),
  );
  const { volumeMounts: _v, ...rest } = c;
  return mounts && mounts.length > 0 ? { ...rest, volumeMounts: mounts } : rest;
};

/**
 * Pod `name` of run B from run A's injected pod: proxy-init and the app container as they are, the
 * identity token volume as the injector made it, the minimesh-proxy sidecar replaced by linkerd2-proxy (its
 * MINIMESH_PROXY_* environment renamed LINKERD2_PROXY_*, one core, the destination profile settings of
 * packages/proxy/test/support/netns-mesh.ts), its key and CSR from a Secret of its own in the identity
 * directory (linkerd2-proxy reads key.p8 and csr.der there; the minimesh proxy makes its key in memory).
 */
export function linkerdPod(t: PodTemplate, ns: string, name: string, image: string): K8sObject {
  const init = (t.spec.initContainers ?? []).map((c) => {
    if (c.name !== PROXY_CONTAINER.minimesh) return stripApiAccess(c);
    const env = (c.env as { name: string; value?: string; valueFrom?: unknown }[]).map((e) =>
      e.name.startsWith('MINIMESH_PROXY_')
        ? { ...e, name: `LINKERD2_PROXY_${e.name.slice('MINIMESH_PROXY_'.length)}` }
        : e,
    );
    const get = (n: string) => env.find((e) => e.name === n)?.value;
    const set = (n: string, value: string) => {
      const i = env.findIndex((e) => e.name === n);
      if (i >= 0) env[i] = { name: n, value };
      else env.push({ name: n, value });
    };
    set('LINKERD2_PROXY_LOG', 'warn,linkerd=info');
    set('LINKERD2_PROXY_LOG_FORMAT', 'plain');
    set('LINKERD2_PROXY_CORES', '1');
    set('LINKERD2_PROXY_DESTINATION_PROFILE_SUFFIXES', 'svc.cluster.local.');
    set('LINKERD2_PROXY_DESTINATION_PROFILE_NETWORKS', get('LINKERD2_PROXY_POLICY_CLUSTER_NETWORKS') ?? '10.0.0.0/8');
    const ports = (c.ports as { name: string; containerPort: number }[]).map((p) => ({
      ...p,
      name: p.name.replace('minimesh-', 'linkerd-'),
    }));
    return { ...stripApiAccess(c), name: PROXY_CONTAINER.linkerd, image, imagePullPolicy: 'Never', env, ports };
  });
  const volumes = (t.spec.volumes ?? [])
    .filter((v) => !String(v.name).startsWith('kube-api-access'))
    .map((v) =>
      v.name === 'minimesh-identity-end-entity' ? { name: v.name, secret: { secretName: `${name}-l5d-id` } } : v,
    );
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { app: APP }, annotations: { 'minimesh.io/inject': 'disabled' } },
    spec: {
      serviceAccountName: APP,
      terminationGracePeriodSeconds: 1,
      ...(t.spec.securityContext ? { securityContext: t.spec.securityContext } : {}),
      initContainers: init,
      containers: t.spec.containers.map(stripApiAccess),
      volumes,
    },
  };
}
