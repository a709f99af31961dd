// The policy controller against the real API server of the local cluster: it runs with a kubeconfig for
// the destination ServiceAccount and exactly the chart's policy RBAC, the test changes Pods, Services,
// policy resources and Gateway API routes with the admin client and reads the policy API with a real
// gRPC client. It holds its Lease and writes the routes' status. The audit log must show its watches,
// its status patches and no request of its refused.
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  credentials,
  makeGenericClientConstructor,
  status,
  type ClientReadableStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { createKubeClient, loadKubeConfig } from '@minimesh/kube';
import {
  adminClient,
  createNamespace,
  ensureCluster,
  kubeconfigForServiceAccount,
  readAuditEvents,
  type KubeClient,
  type KubeObject,
} from '@minimesh/local-cluster';
import { inbound, outbound } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CONTROLLER_NAME } from '../src/status/route-status.js';
import { policyCrds } from '../src/crds.js';
import { startPolicy, type Policy } from '../src/policy.js';
import { TEST_CLUSTER } from '../src/testing.js';

const suffix = randomBytes(3).toString('hex');
const ns = `mm-pol-app-${suffix}`;
const cpNs = `mm-pol-cp-${suffix}`;
const SA = 'minimesh-destination';
const G = 'policy.minimesh.io';
const logger = createLogger({ name: 'policy-test', level: process.env.POLICY_TEST_LOG ?? 'silent', format: 'plain' });
let admin: KubeClient;
let policy: Policy;
let inboundClient: inbound.InboundServerPoliciesClient & { close(): void };
let outboundClient: outbound.OutboundPoliciesClient & { close(): void };
const createdCrds: string[] = [];
const GW = 'gateway.networking.k8s.io';
const LEASE = 'minimesh-policy-write';
const streams: Array<ClientReadableStream<unknown>> = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(100);
  }
}

/** The chart's ClusterRole for the policy controller (templates/policy-rbac.yaml), bound to a test SA. */
function chartRbac(): KubeObject[] {
  const text = readFileSync(
    fileURLToPath(new URL('../../../charts/minimesh/templates/policy-rbac.yaml', import.meta.url)),
    'utf8',
  );
  const rendered = text
    .replace(/\{\{ \.Release\.Namespace \}\}/g, cpNs)
    .replace(/\n\s*labels:\n\s*\{\{-[^}]*\}\}/g, '');
  return parseAllDocuments(rendered).map((d) => d.toJS() as KubeObject);
}

/** Where an RBAC object of the chart is created (cluster-wide or in the control-plane namespace). */
function rbacCollection(o: KubeObject): string {
  const base = '/apis/rbac.authorization.k8s.io/v1';
  const plural = {
    ClusterRole: 'clusterroles',
    ClusterRoleBinding: 'clusterrolebindings',
    Role: 'roles',
    RoleBinding: 'rolebindings',
  }[String(o.kind)];
  if (!plural) throw new Error(`policy-rbac.yaml: unexpected kind ${String(o.kind)}`);
  return o.kind.startsWith('Cluster') ? `${base}/${plural}` : `${base}/namespaces/${cpNs}/${plural}`;
}

/** The Gateway API CRDs the controller serves, from the Go module (scripts/gateway-api.sh). */
function gatewayCrds(): KubeObject[] {
  const script = fileURLToPath(new URL('../../../scripts/gateway-api.sh', import.meta.url));
  const text = execFileSync('bash', [script, 'crds'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

async function apply(obj: KubeObject): Promise<void> {
  const [group, version] = String(obj.apiVersion).includes('/')
    ? String(obj.apiVersion).split('/')
    : ['', obj.apiVersion];
  const plural = `${String(obj.kind).toLowerCase()}${obj.kind === 'AuthorizationPolicy' ? '' : 's'}`.replace(
    /policys$/,
    'policies',
  );
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const path = `${base}/namespaces/${obj.metadata.namespace}/${obj.kind === 'AuthorizationPolicy' ? 'authorizationpolicies' : plural}/${obj.metadata.name}`;
  await admin.request('PATCH', `${path}?fieldManager=policy-test&force=true`, obj, 'application/apply-patch+yaml');
}

async function remove(obj: KubeObject): Promise<void> {
  const [group, version] = String(obj.apiVersion).includes('/')
    ? String(obj.apiVersion).split('/')
    : ['', obj.apiVersion];
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const plural = obj.kind === 'AuthorizationPolicy' ? 'authorizationpolicies' : `${String(obj.kind).toLowerCase()}s`;
  await admin
    // A pod bound to a node that does not exist would wait for a kubelet's confirmation: delete it at once.
    .request(
      'DELETE',
      `${base}/namespaces/${obj.metadata.namespace}/${plural}/${obj.metadata.name}${obj.kind === 'Pod' ? '?gracePeriodSeconds=0' : ''}`,
    )
    .catch(() => undefined);
}

const pod = (name: string, labels: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, labels },
  spec: {
    nodeName: 'mm-not-scheduled',
    containers: [
      {
        name: 'app',
        image: 'minimesh.test/none:e2e',
        ports: [{ name: 'http', containerPort: 8080 }],
        readinessProbe: { httpGet: { path: '/healthz', port: 'http' } },
      },
    ],
  },
});
const SERVER: KubeObject = {
  apiVersion: `${G}/v1beta3`,
  kind: 'Server',
  metadata: { name: 'web-http', namespace: ns },
  spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http', proxyProtocol: 'HTTP/1' },
};
const POLICY: KubeObject = {
  apiVersion: `${G}/v1alpha1`,
  kind: 'AuthorizationPolicy',
  metadata: { name: 'client-only', namespace: ns },
  spec: {
    targetRef: { group: G, kind: 'Server', name: 'web-http' },
    requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
  },
};

function watchPort(
  podName: string,
  port: number,
): { messages: inbound.Server[]; ended: () => boolean; error: () => ServiceError | undefined } {
  const messages: inbound.Server[] = [];
  let ended = false;
  let error: ServiceError | undefined;
  const s = inboundClient.watchPort({ workload: JSON.stringify({ ns, pod: podName }), port });
  streams.push(s as ClientReadableStream<unknown>);
  s.on('data', (m: inbound.Server) => messages.push(m));
  s.on('end', () => (ended = true));
  s.on('error', (e: ServiceError) => (error = e));
  return { messages, ended: () => ended, error: () => error };
}

beforeAll(async () => {
  await ensureCluster();
  admin = adminClient();
  for (const crd of [...policyCrds(), ...gatewayCrds()]) {
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
    const existing = await admin.get<KubeObject>(path);
    if (existing?.metadata?.annotations?.['meta.helm.sh/release-name']) continue;
    await admin.request('PATCH', `${path}?fieldManager=policy-test&force=true`, crd, 'application/apply-patch+yaml');
    if (!existing) createdCrds.push(path);
  }
  await createNamespace(ns);
  await createNamespace(cpNs);
  await admin.request('POST', `/api/v1/namespaces/${cpNs}/serviceaccounts`, {
    metadata: { name: SA, namespace: cpNs },
  });
  for (const o of chartRbac()) await admin.request('POST', rbacCollection(o), o);
  await until('CRDs established', async () => {
    for (const crd of [...policyCrds(), ...gatewayCrds()]) {
      const c = await admin.get<KubeObject>(
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
      );
      if (
        !(c?.status?.conditions ?? []).some(
          (x: { type: string; status: string }) => x.type === 'Established' && x.status === 'True',
        )
      )
        return false;
    }
    return true;
  });
  const kubeconfig = await kubeconfigForServiceAccount({ namespace: cpNs, serviceAccount: SA });
  const api = createKubeClient(await loadKubeConfig({ path: kubeconfig }), { userAgent: 'minimesh-policy/test' });
  policy = await startPolicy({
    api,
    logger,
    cluster: { ...TEST_CLUSTER, controlPlaneNamespace: cpNs },
    addr: '127.0.0.1:0',
    adminAddr: '127.0.0.1:0',
    statusLease: {
      name: LEASE,
      identity: `policy-test-${suffix}`,
      durationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 1000,
    },
    statusResyncMs: 2000,
  });
  await policy.synced();
  const In = makeGenericClientConstructor(inbound.InboundServerPoliciesService, 'InboundServerPolicies');
  const Out = makeGenericClientConstructor(outbound.OutboundPoliciesService, 'OutboundPolicies');
  inboundClient = new In(`127.0.0.1:${policy.grpcPort}`, credentials.createInsecure()) as never;
  outboundClient = new Out(`127.0.0.1:${policy.grpcPort}`, credentials.createInsecure()) as never;
}, 600_000);

afterAll(async () => {
  for (const s of streams) s.cancel();
  inboundClient?.close();
  outboundClient?.close();
  await policy?.close();
  if (!admin) return;
  await admin.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
  await admin.request('DELETE', `/api/v1/namespaces/${cpNs}`).catch(() => undefined);
  for (const o of chartRbac())
    await admin.request('DELETE', `${rbacCollection(o)}/${o.metadata.name}`).catch(() => undefined);
  for (const path of createdCrds) await admin.request('DELETE', path).catch(() => undefined);
}, 60_000);

describe('the policy controller on the API server', () => {
  it('serves a pod port from the watches, then streams each change, and ends the stream when the pod goes', async () => {
    await apply(pod('web-1', { app: 'web' }));
    await until('the pod is indexed', () => policy.index.workload('pod', ns, 'web-1'));
    const w = watchPort('web-1', 8080);
    await until('the first policy', () => w.messages.length >= 1);
    expect(w.messages[0]?.labels).toEqual({ group: '', kind: 'default', name: 'all-unauthenticated' });
    await apply(SERVER);
    await until('the Server', () => w.messages.at(-1)?.labels.name === 'web-http');
    expect(w.messages.at(-1)?.authorizations).toEqual([]);
    await apply(POLICY);
    await until('the policy', () => w.messages.at(-1)?.authorizations.length === 1);
    expect(w.messages.at(-1)?.authorizations[0]?.labels.name).toBe('client-only');
    await remove(POLICY);
    await until('the policy removed', () => w.messages.at(-1)?.authorizations.length === 0);
    await remove(pod('web-1', {}));
    await until('the stream ends', () => w.ended());
    expect(w.error()).toBeUndefined();
  });

  it('answers NotFound for a pod it does not know, and the Service port by authority and ClusterIP', async () => {
    await new Promise<void>((resolve) =>
      inboundClient.getPort({ workload: JSON.stringify({ ns, pod: 'ghost' }), port: 80 }, (err) => {
        expect(err?.code).toBe(status.NOT_FOUND);
        resolve();
      }),
    );
    const svc: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: ns },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    };
    await apply(svc);
    const created = await until('the Service', () => admin.get<KubeObject>(`/api/v1/namespaces/${ns}/services/web`));
    await until('the Service is indexed', () => policy.index.lookupIp(created.spec.clusterIP, 80));
    const get = (target: outbound.TrafficSpec['target']) =>
      new Promise<outbound.OutboundPolicy>((resolve, reject) =>
        outboundClient.get({ sourceWorkload: JSON.stringify({ ns, pod: 'client' }), target }, (err, p) =>
          err ? reject(err) : resolve(p!),
        ),
      );
    const byName = await get({ $case: 'authority', value: `web.${ns}.svc.cluster.local:80` });
    expect(byName.metadata?.kind).toMatchObject({
      $case: 'resource',
      value: { kind: 'Service', name: 'web', namespace: ns, port: 80 },
    });
  });

  it('serves Gateway API routes on Service ports and, holding its Lease, writes their status', async () => {
    const svc = (name: string, ports: object[]): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns },
      spec: { selector: { app: name }, ports },
    });
    await apply(svc('echo', [{ name: 'http', port: 80, appProtocol: 'http' }]));
    await apply(svc('echo-v1', [{ name: 'http', port: 80 }]));
    await apply(svc('rpc', [{ name: 'grpc', port: 7070, appProtocol: 'kubernetes.io/h2c' }]));
    const route = (kind: string, name: string, spec: object): KubeObject => ({
      apiVersion: `${GW}/v1`,
      kind,
      metadata: { name, namespace: ns },
      spec,
    });
    // (The API server's CEL refuses two parentRefs to one Service without distinct sectionNames.)
    const wrongPort = route('HTTPRoute', 'wrong-port', {
      parentRefs: [{ group: '', kind: 'Service', name: 'echo', port: 9999 }],
      rules: [{ backendRefs: [{ name: 'echo-v1', port: 80 }] }],
    });
    const split = route('HTTPRoute', 'split', {
      parentRefs: [{ group: '', kind: 'Service', name: 'echo', port: 80 }],
      rules: [
        {
          backendRefs: [
            { name: 'echo-v1', port: 80, weight: 90 },
            { name: 'echo-v2', port: 80, weight: 10 },
          ],
        },
      ],
    });
    const grpc = route('GRPCRoute', 'rpc', {
      parentRefs: [{ group: '', kind: 'Service', name: 'rpc' }],
      rules: [{ matches: [{ method: { service: 'grpc.Echo' } }], backendRefs: [{ name: 'rpc', port: 7070 }] }],
    });
    await apply(split);
    await apply(wrongPort);
    await apply(grpc);
    await until('the Lease held', () => policy.status?.elector.isLeader, 30_000);

    type Cond = { type: string; status: string; reason: string; message: string; observedGeneration?: number };
    const ours = async (kind: string, name: string) => {
      const r = await admin.get<KubeObject>(`/apis/${GW}/v1/namespaces/${ns}/${kind}/${name}`);
      const parents = (r?.status?.parents ?? []) as Array<{
        controllerName: string;
        parentRef: { port?: number };
        conditions: Cond[];
      }>;
      return parents.filter((p) => p.controllerName === CONTROLLER_NAME);
    };
    const conds = (p: { conditions: Cond[] } | undefined) =>
      p?.conditions.map((c) => `${c.type}=${c.status} ${c.reason}`);
    const written = await until('the HTTPRoute status', async () => {
      const p = await ours('httproutes', 'split');
      return p.length === 1 ? p : undefined;
    });
    expect(conds(written[0])).toEqual(['Accepted=True Accepted', 'ResolvedRefs=False BackendNotFound']);
    expect(written[0]?.conditions[0]?.observedGeneration).toBe(1);
    const refused = await until('the other HTTPRoute status', async () => {
      const p = await ours('httproutes', 'wrong-port');
      return p.length === 1 ? p[0] : undefined;
    });
    expect(conds(refused)).toEqual(['Accepted=False NoMatchingParent', 'ResolvedRefs=True ResolvedRefs']);
    expect(refused.conditions[0]?.message).toBe(`Service ${ns}/echo has no port 9999 (it has 80)`);

    const get = (authority: string) =>
      new Promise<outbound.OutboundPolicy>((resolve, reject) =>
        outboundClient.get(
          { sourceWorkload: JSON.stringify({ ns, pod: 'client' }), target: { $case: 'authority', value: authority } },
          (err, p) => (err ? reject(err) : resolve(p!)),
        ),
      );
    const http = await get(`echo.${ns}.svc.cluster.local:80`);
    expect(http.protocol?.kind?.$case).toBe('http1');
    const r0 = http.protocol?.kind?.$case === 'http1' ? http.protocol.kind.value.routes[0] : undefined;
    expect(r0?.metadata?.kind).toMatchObject({
      $case: 'resource',
      value: { group: GW, kind: 'HTTPRoute', name: 'split' },
    });
    const dist = r0?.rules[0]?.backends?.kind;
    const backends = dist?.$case === 'randomAvailable' ? dist.value.backends : [];
    expect(backends.map((b) => b.weight)).toEqual([90, 10]);
    expect(backends[1]?.backend?.filters[0]?.kind).toMatchObject({ $case: 'failureInjector', value: { status: 500 } });

    // The missing backend appears: its share is served and the status says so.
    await apply(svc('echo-v2', [{ name: 'http', port: 80 }]));
    await until('ResolvedRefs=True', async () => {
      const p = await ours('httproutes', 'split');
      return conds(p.find((x) => x.parentRef.port === 80))?.[1] === 'ResolvedRefs=True ResolvedRefs';
    });

    const rpc = await get(`rpc.${ns}.svc.cluster.local:7070`);
    expect(rpc.protocol?.kind?.$case).toBe('grpc');
    await until('the GRPCRoute status', async () => {
      const p = await ours('grpcroutes', 'rpc');
      return conds(p[0])?.join(', ') === 'Accepted=True Accepted, ResolvedRefs=True ResolvedRefs';
    });
    // The status is written once per change, not on every resync.
    const patches = () =>
      readAuditEvents().filter(
        (e) =>
          e.user?.username === `system:serviceaccount:${cpNs}:${SA}` &&
          e.verb === 'patch' &&
          e.objectRef?.subresource === 'status' &&
          e.objectRef?.name === 'rpc',
      ).length;
    const before = patches();
    await sleep(5000);
    expect(patches()).toBe(before);
  }, 120_000);

  it('shows its watches in the audit log, and RBAC refused none of its requests', async () => {
    const user = `system:serviceaccount:${cpNs}:${SA}`;
    const events = await until(
      'audit events',
      () => {
        const ev = readAuditEvents().filter((e) => e.user?.username === user);
        return ev.some((e) => e.verb === 'watch' && e.objectRef?.resource === 'httproutes') ? ev : undefined;
      },
      30_000,
    );
    const watched = new Set(
      events.filter((e) => e.verb === 'watch').map((e) => `${e.objectRef?.apiGroup ?? ''}/${e.objectRef?.resource}`),
    );
    for (const r of [
      '/pods',
      '/services',
      `${G}/servers`,
      `${G}/authorizationpolicies`,
      `${G}/meshtlsauthentications`,
      `${G}/networkauthentications`,
      `${G}/httproutes`,
      `${GW}/httproutes`,
      `${GW}/grpcroutes`,
      `${GW}/tlsroutes`,
      `${GW}/tcproutes`,
    ])
      expect(watched, r).toContain(r);
    const patched = new Set(
      events
        .filter((e) => e.verb === 'patch')
        .map((e) => `${e.objectRef?.apiGroup ?? ''}/${e.objectRef?.resource}/${e.objectRef?.subresource ?? ''}`),
    );
    expect([...patched].sort()).toEqual([`${GW}/grpcroutes/status`, `${GW}/httproutes/status`]);
    const leases = new Set(
      events.filter((e) => e.objectRef?.resource === 'leases' && e.objectRef.name === LEASE).map((e) => e.verb),
    );
    expect(leases).toContain('update');
    const denied = events.filter((e) => e.annotations?.['authorization.k8s.io/decision'] === 'forbid');
    // ExternalWorkloads may be absent (their CRD comes with the chart): a 404, never a 403.
    expect(denied.map((e) => e.requestURI)).toEqual([]);
  });
});
