// The policy controller against the real API server of the local cluster: it runs with a kubeconfig for
// the destination ServiceAccount and exactly the chart's policy RBAC, the test changes Pods, Services and
// policy resources with the admin client and reads the policy API with a real gRPC client. The audit log
// must show its watches and no request of its refused.
import { randomBytes } from 'node:crypto';
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
  for (const crd of policyCrds()) {
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
  for (const o of chartRbac()) {
    const kind = o.kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings';
    await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/${kind}`, o);
  }
  await until('CRDs established', async () => {
    for (const crd of policyCrds()) {
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
  for (const o of chartRbac()) {
    const kind = o.kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings';
    await admin
      .request('DELETE', `/apis/rbac.authorization.k8s.io/v1/${kind}/${o.metadata.name}`)
      .catch(() => undefined);
  }
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
    ])
      expect(watched, r).toContain(r);
    const denied = events.filter((e) => e.annotations?.['authorization.k8s.io/decision'] === 'forbid');
    // ExternalWorkloads may be absent (their CRD comes with the chart): a 404, never a 403.
    expect(denied.map((e) => e.requestURI)).toEqual([]);
  });
});
