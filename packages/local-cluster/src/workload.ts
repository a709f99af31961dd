// The workload generator of a simulated cluster (kwok.ts): namespaces of Deployments with P pods each on
// the simulated nodes, a Service over each, and the mesh policy a real cluster would have in proportion:
// per Deployment a Server for its port, an AuthorizationPolicy on it and an HTTPRoute on its Service, per
// namespace a MeshTLSAuthentication. Churn is what a cluster lives with: rolling updates (a restart of one
// Deployment after another), so pods, their IPs and the EndpointSlices keep changing at a set rate.
//
// workloadObjects() is pure (the objects for a size); applyWorkload() makes the cluster hold exactly them
// (creates what is missing, resizes, deletes what is past the size) and waits until every pod is Ready.
import { adminClient } from './cluster.js';
import { KubeApiError, type KubeClient, type KubeObject } from './kube-client.js';
import { SIMULATED_NODE_LABELS, SIMULATED_NODE_TOLERATION } from './kwok.js';

/** Every object the generator makes carries this label (namespaces too): how it finds its own. */
export const WORKLOAD_LABEL = 'minimesh.io/scale-workload';

export interface WorkloadSpec {
  /** Pods in total. */
  pods: number;
  /** Pods per Deployment (default 10): the last Deployment takes the remainder. */
  podsPerDeployment?: number;
  /** Deployments per namespace (default 20). */
  deploymentsPerNamespace?: number;
  /** Namespace name prefix (default mm-scale): namespaces mm-scale-0, mm-scale-1, ... */
  prefix?: string;
  /**
   * API groups of the policy objects (Server, AuthorizationPolicy, MeshTLSAuthentication, HTTPRoute; the
   * kinds and versions are the same in policy.minimesh.io and Linkerd's policy.linkerd.io). Default
   * ['policy.minimesh.io']; [] makes none.
   */
  policyGroups?: string[];
  /**
   * Labels on every pod beside the generator's own: what a mesh's injector adds to the pods it meshes
   * (Linkerd's policy controller only indexes pods labelled `linkerd.io/control-plane-ns`). Default none.
   */
  podLabels?: Record<string, string>;
  /**
   * Containers beside the app's in every pod (never run: the nodes are simulated): what an injector
   * adds, e.g. Linkerd's proxy container, whose environment Linkerd's destination reads for a meshed
   * pod's ports. Default none.
   */
  sidecars?: Array<Record<string, unknown>>;
}

export interface WorkloadLayout {
  namespaces: string[];
  /** Deployment (and Service, ServiceAccount, Server...) names with their namespace and replicas. */
  deployments: Array<{ namespace: string; name: string; replicas: number }>;
}

export const APP_PORT = 8080;
export const SERVICE_PORT = 80;

function check(spec: WorkloadSpec): Required<WorkloadSpec> {
  const full = {
    podsPerDeployment: 10,
    deploymentsPerNamespace: 20,
    prefix: 'mm-scale',
    policyGroups: ['policy.minimesh.io'],
    podLabels: {},
    sidecars: [],
    ...spec,
  };
  const whole = (name: string, v: number, min: number) => {
    if (!Number.isInteger(v) || v < min)
      throw new Error(`workload: ${name} ${v} is not valid: expected a whole number of at least ${min}`);
  };
  whole('pods', full.pods, 0);
  whole('podsPerDeployment', full.podsPerDeployment, 1);
  whole('deploymentsPerNamespace', full.deploymentsPerNamespace, 1);
  if (!/^[a-z][a-z0-9-]{0,40}$/.test(full.prefix))
    throw new Error(
      `workload: prefix "${full.prefix}" is not valid: expected a lowercase DNS label of at most 41 characters`,
    );
  return full;
}

export function workloadLayout(spec: WorkloadSpec): WorkloadLayout {
  const s = check(spec);
  const count = Math.ceil(s.pods / s.podsPerDeployment);
  const deployments = Array.from({ length: count }, (_, i) => ({
    namespace: `${s.prefix}-${Math.floor(i / s.deploymentsPerNamespace)}`,
    name: `web-${i % s.deploymentsPerNamespace}`,
    replicas: Math.min(s.podsPerDeployment, s.pods - i * s.podsPerDeployment),
  }));
  return { namespaces: [...new Set(deployments.map((d) => d.namespace))], deployments };
}

const labels = { [WORKLOAD_LABEL]: 'true' };

/** The objects of one Deployment: ServiceAccount, Deployment, Service and the policy on them. */
export function deploymentObjects(
  d: { namespace: string; name: string; replicas: number },
  policyGroups: string[],
  pod: { labels?: Record<string, string>; sidecars?: Array<Record<string, unknown>> } = {},
): KubeObject[] {
  const podLabels = pod.labels ?? {};
  const meta = (kind: string) => ({ name: d.name, namespace: d.namespace, labels: { ...labels, app: d.name, kind } });
  const objects: KubeObject[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta('sa') },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta('deployment'),
      spec: {
        replicas: d.replicas,
        selector: { matchLabels: { app: d.name } },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
        template: {
          metadata: { labels: { ...podLabels, ...labels, app: d.name } },
          spec: {
            serviceAccountName: d.name,
            nodeSelector: { ...SIMULATED_NODE_LABELS },
            tolerations: [{ ...SIMULATED_NODE_TOLERATION }],
            // kwok deletes at once what is deleted; no grace to wait for
            terminationGracePeriodSeconds: 0,
            containers: [
              {
                name: 'app',
                // never pulled: no container runs on a simulated node
                image: 'registry.k8s.io/pause:3.10',
                ports: [{ name: 'http', containerPort: APP_PORT, protocol: 'TCP' }],
              },
              ...(pod.sidecars ?? []),
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      // kube-proxy skips Services with a service-proxy-name it does not own: nothing is routed to the
      // simulated pods, and the real node's kube-proxy is spared thousands of iptables rules.
      metadata: {
        ...meta('service'),
        labels: { ...meta('service').labels, 'service.kubernetes.io/service-proxy-name': 'simulated' },
      },
      spec: {
        selector: { app: d.name },
        ports: [{ name: 'http', port: SERVICE_PORT, targetPort: APP_PORT, protocol: 'TCP' }],
      },
    },
  ];
  for (const group of policyGroups) {
    objects.push(
      {
        apiVersion: `${group}/v1beta3`,
        kind: 'Server',
        metadata: meta('server'),
        spec: { podSelector: { matchLabels: { app: d.name } }, port: 'http', proxyProtocol: 'HTTP/1' },
      },
      {
        apiVersion: `${group}/v1alpha1`,
        kind: 'AuthorizationPolicy',
        metadata: meta('authorizationpolicy'),
        spec: {
          targetRef: { group, kind: 'Server', name: d.name },
          requiredAuthenticationRefs: [{ group, kind: 'MeshTLSAuthentication', name: 'mesh' }],
        },
      },
      {
        apiVersion: `${group}/v1beta3`,
        kind: 'HTTPRoute',
        metadata: meta('httproute'),
        spec: {
          parentRefs: [{ group: 'core', kind: 'Service', name: d.name, port: SERVICE_PORT }],
          rules: [
            {
              matches: [{ path: { type: 'PathPrefix', value: '/api' } }],
              backendRefs: [{ name: d.name, port: SERVICE_PORT }],
            },
          ],
        },
      },
    );
  }
  return objects;
}

/** The objects of one namespace besides its Deployments': the namespace and its MeshTLSAuthentication. */
export function namespaceObjects(namespace: string, policyGroups: string[]): KubeObject[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels } },
    ...policyGroups.map((group) => ({
      apiVersion: `${group}/v1alpha1`,
      kind: 'MeshTLSAuthentication',
      metadata: { name: 'mesh', namespace, labels },
      spec: { identities: ['*'] },
    })),
  ];
}

const PLURALS: Record<string, string> = {
  Namespace: 'namespaces',
  ServiceAccount: 'serviceaccounts',
  Deployment: 'deployments',
  Service: 'services',
  Server: 'servers',
  AuthorizationPolicy: 'authorizationpolicies',
  MeshTLSAuthentication: 'meshtlsauthentications',
  HTTPRoute: 'httproutes',
};

/** The collection URL an object is created in. */
export function collectionPath(o: KubeObject): string {
  const api = String(o.apiVersion).includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const plural = PLURALS[o.kind as string];
  if (!plural) throw new Error(`workload: no collection known for kind ${o.kind}`);
  return o.kind === 'Namespace' ? `${api}/${plural}` : `${api}/namespaces/${o.metadata.namespace}/${plural}`;
}

async function create(admin: KubeClient, o: KubeObject): Promise<void> {
  try {
    await admin.request('POST', collectionPath(o), o);
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 409) return;
    if (err instanceof KubeApiError && err.status === 404 && String(o.apiVersion).startsWith('policy.'))
      throw new Error(
        `workload: the ${o.kind} CRD of ${String(o.apiVersion).split('/')[0]} is not installed: install the mesh's CRDs first (the chart, or npm run bench -- scale does), or make no policy (--no-policy)`,
        { cause: err },
      );
    throw err;
  }
}

/** Runs fn over items, `concurrency` at a time. */
async function pool<T>(items: T[], concurrency: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

type Log = (msg: string) => void;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ApplyOptions {
  log?: Log;
  /** How long to wait for every pod to be Ready (default 15 min). */
  timeoutMs?: number;
  /** Parallel API requests while creating (default 8). */
  concurrency?: number;
}

/**
 * Makes the cluster hold exactly the workload of `spec`: creates the missing namespaces and objects,
 * sets the replicas of existing Deployments, deletes Deployments (and their objects) and namespaces past
 * the size, then waits until every Deployment has all its pods updated and Ready. Needs simulated nodes
 * (ensureSimulatedNodes) and, for policy objects, the CRDs of each policy group.
 */
export async function applyWorkload(spec: WorkloadSpec, opts: ApplyOptions = {}): Promise<WorkloadLayout> {
  const s = check(spec);
  const log = opts.log ?? (() => {});
  const admin = adminClient();
  const layout = workloadLayout(s);
  const existing = await listWorkload(admin, s.prefix);
  const want = new Map(layout.deployments.map((d) => [`${d.namespace}/${d.name}`, d]));
  // namespaces first (each waits for its default ServiceAccount only through the Deployment's own SA)
  const newNamespaces = layout.namespaces.filter((n) => !existing.namespaces.includes(n));
  await pool(newNamespaces, opts.concurrency ?? 8, async (ns) => {
    for (const o of namespaceObjects(ns, s.policyGroups)) await create(admin, o);
  });
  const missing = layout.deployments.filter((d) => !existing.deployments.has(`${d.namespace}/${d.name}`));
  if (missing.length > 0) log(`creating ${missing.length} Deployment(s) with their Services and policy`);
  await pool(missing, opts.concurrency ?? 8, async (d) => {
    for (const o of deploymentObjects(d, s.policyGroups, { labels: s.podLabels, sidecars: s.sidecars }))
      await create(admin, o);
  });
  // A policy group the existing workload was made without (Linkerd's, in a run with Linkerd's controllers
  // after one without them): its objects for the namespaces and Deployments that were already there.
  const kept = layout.namespaces.filter((n) => existing.namespaces.includes(n));
  for (const group of s.policyGroups) {
    const lacking: string[] = [];
    await pool(kept, opts.concurrency ?? 8, async (ns) => {
      const mesh = namespaceObjects(ns, [group])[1]!;
      const got = await admin.request('GET', `${collectionPath(mesh)}/${mesh.metadata.name}`).then(
        () => true,
        (err: unknown) => {
          if (err instanceof KubeApiError && err.status === 404) return false;
          throw err;
        },
      );
      if (!got) lacking.push(ns);
    });
    if (lacking.length === 0) continue;
    const deps = layout.deployments.filter(
      (d) => lacking.includes(d.namespace) && existing.deployments.has(`${d.namespace}/${d.name}`),
    );
    log(`creating the ${group} objects of ${lacking.length} existing namespace(s) and ${deps.length} Deployment(s)`);
    const ofGroup = (o: KubeObject) => String(o.apiVersion).startsWith(`${group}/`);
    await pool(lacking, opts.concurrency ?? 8, async (ns) => {
      for (const o of namespaceObjects(ns, [group]).filter(ofGroup)) await create(admin, o);
    });
    await pool(deps, opts.concurrency ?? 8, async (d) => {
      for (const o of deploymentObjects(d, [group]).filter(ofGroup)) await create(admin, o);
    });
  }
  for (const [key, replicas] of existing.deployments) {
    const d = want.get(key);
    const [namespace, name] = key.split('/') as [string, string];
    if (d && d.replicas !== replicas)
      await admin.request(
        'PATCH',
        `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`,
        { spec: { replicas: d.replicas } },
        'application/merge-patch+json',
      );
  }
  // past the size: whole namespaces, then single Deployments with their objects
  const extraNamespaces = existing.namespaces.filter((n) => !layout.namespaces.includes(n));
  const extra = [...existing.deployments.keys()].filter(
    (k) => !want.has(k) && !extraNamespaces.includes(k.split('/')[0]!),
  );
  if (extraNamespaces.length + extra.length > 0)
    log(`deleting ${extraNamespaces.length} namespace(s) and ${extra.length} Deployment(s) past the size`);
  for (const ns of extraNamespaces) await admin.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
  await pool(extra, opts.concurrency ?? 8, async (key) => {
    const [namespace, name] = key.split('/') as [string, string];
    for (const o of deploymentObjects({ namespace, name, replicas: 0 }, s.policyGroups))
      await admin.request('DELETE', `${collectionPath(o)}/${name}?propagationPolicy=Background`).catch(() => undefined);
  });
  await waitForWorkload(admin, layout, s.prefix, log, opts.timeoutMs ?? 15 * 60_000);
  return layout;
}

/** The generator's namespaces of this prefix (<prefix>-<n>), and their Deployments with replicas. */
async function listWorkload(
  admin: KubeClient,
  prefix: string,
): Promise<{ namespaces: string[]; deployments: Map<string, number> }> {
  const ours = new RegExp(`^${prefix}-\\d+$`);
  const sel = `labelSelector=${encodeURIComponent(`${WORKLOAD_LABEL}=true`)}`;
  const ns = await admin.request<{ items: KubeObject[] }>('GET', `/api/v1/namespaces?${sel}`);
  const deps = await admin.request<{ items: KubeObject[] }>('GET', `/apis/apps/v1/deployments?${sel}`);
  return {
    namespaces: ns.items
      .filter((n) => !n.metadata.deletionTimestamp && ours.test(n.metadata.name))
      .map((n) => n.metadata.name as string),
    deployments: new Map(
      deps.items
        .filter((d) => ours.test(d.metadata.namespace))
        .map((d) => [`${d.metadata.namespace}/${d.metadata.name}`, Number(d.spec?.replicas ?? 0)]),
    ),
  };
}

/** Counts of the workload's Deployments as the API reports them. */
export async function workloadStatus(
  admin: KubeClient = adminClient(),
  prefix = 'mm-scale',
): Promise<{ deployments: number; desired: number; ready: number; updated: number; settled: number }> {
  const ours = new RegExp(`^${prefix}-\\d+$`);
  const sel = `labelSelector=${encodeURIComponent(`${WORKLOAD_LABEL}=true`)}`;
  const all = await admin.request<{ items: KubeObject[] }>('GET', `/apis/apps/v1/deployments?${sel}`);
  const deps = { items: all.items.filter((d) => ours.test(d.metadata.namespace)) };
  let desired = 0;
  let ready = 0;
  let updated = 0;
  let settled = 0;
  for (const d of deps.items) {
    const want = Number(d.spec?.replicas ?? 0);
    const st = d.status ?? {};
    desired += want;
    ready += Number(st.readyReplicas ?? 0);
    updated += Number(st.updatedReplicas ?? 0);
    // settled: the controller saw the latest spec, every pod is of it and Ready, none left over
    if (
      Number(st.observedGeneration ?? 0) >= Number(d.metadata.generation ?? 0) &&
      Number(st.updatedReplicas ?? 0) === want &&
      Number(st.readyReplicas ?? 0) === want &&
      Number(st.replicas ?? 0) === want
    )
      settled++;
  }
  return { deployments: deps.items.length, desired, ready, updated, settled };
}

async function waitForWorkload(
  admin: KubeClient,
  layout: WorkloadLayout,
  prefix: string,
  log: Log,
  timeoutMs: number,
): Promise<void> {
  const started = Date.now();
  let lastLog = 0;
  for (;;) {
    const st = await workloadStatus(admin, prefix);
    if (st.deployments === layout.deployments.length && st.settled === st.deployments) {
      log(
        `workload ready: ${st.desired} pods in ${st.deployments} Deployments (${((Date.now() - started) / 1000).toFixed(0)} s)`,
      );
      return;
    }
    if (Date.now() - started > timeoutMs)
      throw new Error(
        `workload: not ready after ${Math.round(timeoutMs / 1000)} s: ${st.ready} of ${st.desired} pods Ready, ${st.settled} of ${layout.deployments.length} Deployments settled`,
      );
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(`waiting for the workload: ${st.ready} of ${st.desired} pods Ready`);
    }
    await sleep(1000);
  }
}

export interface Churn {
  /** Deployments restarted so far. */
  readonly restarts: number;
  stop(): Promise<void>;
}

/**
 * Rolling updates at about `podsPerSecond` pods replaced per second: every podsPerDeployment /
 * podsPerSecond seconds the next Deployment (round robin) gets a new pod-template annotation, so its
 * ReplicaSet is replaced pod by pod (maxSurge and maxUnavailable 25 %), as `kubectl rollout restart` does.
 */
export function startChurn(
  layout: WorkloadLayout,
  opts: { podsPerSecond: number; log?: Log; admin?: KubeClient },
): Churn {
  if (!(opts.podsPerSecond > 0))
    throw new Error(`churn: ${opts.podsPerSecond} pods/s is not valid: expected more than 0`);
  const admin = opts.admin ?? adminClient();
  const deps = layout.deployments.filter((d) => d.replicas > 0);
  let stopped = false;
  let restarts = 0;
  let i = 0;
  const loop = (async () => {
    let due = Date.now();
    while (!stopped && deps.length > 0) {
      const d = deps[i++ % deps.length]!;
      due += (d.replicas / opts.podsPerSecond) * 1000;
      try {
        await admin.request(
          'PATCH',
          `/apis/apps/v1/namespaces/${d.namespace}/deployments/${d.name}`,
          {
            spec: { template: { metadata: { annotations: { 'minimesh.io/restarted-at': new Date().toISOString() } } } },
          },
          'application/merge-patch+json',
        );
        restarts++;
      } catch (err) {
        opts.log?.(`churn: restarting ${d.namespace}/${d.name} failed: ${(err as Error).message}`);
      }
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
    }
  })();
  return {
    get restarts() {
      return restarts;
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
