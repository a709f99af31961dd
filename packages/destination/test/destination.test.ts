// destination against the real API server of the local cluster: it runs with a kubeconfig for its own
// ServiceAccount (least-privilege RBAC), the test changes Services, Pods, EndpointSlices and
// ExternalWorkloads with the admin client and reads Get/GetProfile streams with the real gRPC client.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { parsePortRanges } from '@minimesh/config';
import {
  adminClient,
  createNamespace,
  ensureCluster,
  kubeconfigForServiceAccount,
  readAuditEvents,
  type KubeClient,
  type KubeObject,
} from '@minimesh/local-cluster';
import { fromTcpAddress, health as healthProto, type destination } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { parse } from 'yaml';
import { createKubeClient, Informer, loadKubeConfig, type KubeClient as ApiClient } from '@minimesh/kube';
import {
  EndpointIndex,
  keyOfObject,
  MIRROR_MANAGER,
  RESOURCE_PATHS,
  startDestination,
  toSliceRecord,
  type Destination,
  type DestinationOptions,
  type SliceRecord,
} from '../src/index.js';
import {
  createOrIgnore,
  deleteIgnoringMissing,
  describeUpdate,
  destinationRbac,
  dstClient,
  sleep,
  StreamReader,
  until,
} from './helpers.js';

const suffix = randomBytes(3).toString('hex');
const ns = `mm-dst-app-${suffix}`;
const cpNs = `mm-dst-cp-${suffix}`;
const SA = 'minimesh-destination';
const rbacName = `mm-dst-${suffix}`;
const LEASE = { durationMs: 6000, renewDeadlineMs: 4000, retryPeriodMs: 500 };
// The minimesh-crds chart's template for the CRD, without its template lines.
const crdFile = fileURLToPath(new URL('../../../charts/minimesh-crds/templates/workload-crds.yaml', import.meta.url));
const mainJs = fileURLToPath(new URL('../dist/main.js', import.meta.url));

const logger = createLogger({ name: 'destination-test', level: process.env.DST_TEST_LOG ?? 'silent' });
let admin: KubeClient;
let kubeconfig: string;
let dst: Destination;
let client: destination.DestinationClient;
const readers: Array<StreamReader<unknown>> = [];

/** A client of destination's own ServiceAccount, as main.ts makes it. */
async function saClient(): Promise<ApiClient> {
  return createKubeClient(await loadKubeConfig({ path: kubeconfig }), { userAgent: 'minimesh-destination/test' });
}

async function options(identity: string): Promise<DestinationOptions> {
  return {
    api: await saClient(),
    logger: logger.child({ replica: identity }),
    addr: '127.0.0.1:0',
    adminAddr: '127.0.0.1:0',
    controllerNamespace: cpNs,
    clusterDomain: 'cluster.local',
    identityTrustDomain: 'cluster.local',
    defaultOpaquePorts: parsePortRanges('test', '3306'),
    enableH2Upgrade: true,
    streamQueueCapacity: 100,
    lease: { name: 'minimesh-destination-endpoint-write', identity, ...LEASE },
  };
}

function get(path: string): StreamReader<destination.Update> {
  const r = new StreamReader<destination.Update>(
    client.get({ scheme: 'k8s', path, contextToken: JSON.stringify({ ns, nodeName: 'mm-node', pod: 'tester' }) }),
  );
  readers.push(r as StreamReader<unknown>);
  return r;
}

function getProfile(path: string): StreamReader<destination.DestinationProfile> {
  const r = new StreamReader<destination.DestinationProfile>(
    client.getProfile({ scheme: 'k8s', path, contextToken: '' }),
  );
  readers.push(r as StreamReader<unknown>);
  return r;
}

async function next(r: StreamReader<destination.Update>): Promise<string[]> {
  return describeUpdate(await r.next());
}

const fqdn = (svc: string, port: number) => `${svc}.${ns}.svc.cluster.local:${port}`;
const identityOf = (sa: string) => `${sa}.${ns}.serviceaccount.identity.${cpNs}.cluster.local`;

function service(name: string, spec: Record<string, unknown>): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec };
}

function slice(
  name: string,
  svc: string,
  ports: Array<{ name: string; port: number }>,
  endpoints: unknown[],
): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace: ns,
      labels: { 'kubernetes.io/service-name': svc, 'endpointslice.kubernetes.io/managed-by': 'destination-test' },
    },
    addressType: 'IPv4',
    ports: ports.map((p) => ({ ...p, protocol: 'TCP' })),
    endpoints,
  };
}

async function putSlice(obj: KubeObject): Promise<void> {
  const path = `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`;
  const existing = await admin.get(`${path}/${obj.metadata.name}`);
  if (existing)
    await admin.request('PUT', `${path}/${obj.metadata.name}`, {
      ...obj,
      metadata: { ...obj.metadata, resourceVersion: existing.metadata.resourceVersion },
    });
  else await admin.request('POST', path, obj);
}

/**
 * A pod bound to a node that does not exist, so no kubelet runs it, with the status a kubelet would
 * have written.
 */
async function createPod(
  name: string,
  ip: string,
  labels: Record<string, string>,
  serviceAccount: string,
): Promise<void> {
  await admin.request('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels },
    spec: {
      nodeName: 'mm-dst-absent-node',
      serviceAccountName: serviceAccount,
      automountServiceAccountToken: false,
      containers: [{ name: 'app', image: 'minimesh.test/none:1' }],
    },
  });
  await admin.request(
    'PATCH',
    `/api/v1/namespaces/${ns}/pods/${name}/status`,
    { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] } },
    'application/merge-patch+json',
  );
}

async function applyCrd(): Promise<void> {
  const crd = parse(
    (readFileSync(crdFile, 'utf8').split(/^---$/m)[1] ?? '')
      .split('\n')
      .filter((l) => !l.includes('{{'))
      .join('\n'),
  ) as KubeObject;
  const path = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  const existing = await admin.get(`${path}/${crd.metadata.name}`);
  if (existing)
    await admin.request('PUT', `${path}/${crd.metadata.name}`, {
      ...crd,
      metadata: { ...crd.metadata, resourceVersion: existing.metadata.resourceVersion },
    });
  else await admin.request('POST', path, crd);
  await until('CRD established', async () => {
    const c = await admin.get(`${path}/${crd.metadata.name}`);
    return (c?.status?.conditions ?? []).some(
      (x: { type: string; status: string }) => x.type === 'Established' && x.status === 'True',
    );
  });
}

beforeAll(async () => {
  await ensureCluster();
  admin = adminClient();
  await applyCrd();
  await createNamespace(ns);
  await createNamespace(cpNs);
  kubeconfig = await kubeconfigForServiceAccount({ namespace: cpNs, serviceAccount: SA });
  const rbac = destinationRbac(rbacName, cpNs, SA);
  await createOrIgnore(admin, '/apis/rbac.authorization.k8s.io/v1/clusterroles', rbac.clusterRole);
  await createOrIgnore(admin, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', rbac.clusterRoleBinding);
  await createOrIgnore(admin, `/apis/rbac.authorization.k8s.io/v1/namespaces/${cpNs}/roles`, rbac.role);
  await createOrIgnore(admin, `/apis/rbac.authorization.k8s.io/v1/namespaces/${cpNs}/rolebindings`, rbac.roleBinding);
  await createOrIgnore(admin, `/api/v1/namespaces/${ns}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'web', namespace: ns },
  });
  // Let the authorizer's informers see the new bindings before destination's first list.
  await until('RBAC in effect', async () => {
    const probe = await saClient();
    const res = await probe.request('GET', '/apis/discovery.k8s.io/v1/endpointslices?limit=1');
    const lease = await probe.request('GET', `/apis/coordination.k8s.io/v1/namespaces/${cpNs}/leases/none`);
    await probe.close();
    return res.status === 200 && lease.status === 404;
  });
  dst = await startDestination(await options('replica-a'));
  client = dstClient(dst.grpcPort);
}, 600_000);

afterAll(async () => {
  for (const r of readers) r.cancel();
  client?.close();
  await dst?.close();
  if (admin && !process.env.DST_TEST_KEEP) {
    await deleteIgnoringMissing(admin, `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${rbacName}`);
    await deleteIgnoringMissing(admin, `/apis/rbac.authorization.k8s.io/v1/clusterroles/${rbacName}`);
    await deleteIgnoringMissing(admin, `/api/v1/namespaces/${ns}`);
    await deleteIgnoringMissing(admin, `/api/v1/namespaces/${cpNs}`);
  }
});

describe('destination on the local cluster', () => {
  it('reports ready only once every cache has synced, and serves metrics', async () => {
    await dst.synced();
    expect(dst.ready()).toBe(true);
    const port = dst.admin?.port;
    const ready = await fetch(`http://127.0.0.1:${port}/ready`);
    expect(ready.status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const name of [
      'destination_open_streams',
      'destination_updates_sent_total',
      'endpoint_updates_queue_overflow_total',
      'destination_watch_restarts_total',
      'destination_leader',
    ]) {
      expect(metrics).toContain(name);
    }
    for (const kind of ['service', 'endpointslice', 'pod', 'externalworkload'] as const)
      expect(dst.informers[kind].listCount).toBeGreaterThanOrEqual(1);
    // grpc.health.v1 on the gRPC port says the same
    const healthClient = new healthProto.HealthClient(`127.0.0.1:${dst.grpcPort}`, grpc.credentials.createInsecure());
    const status = await new Promise<healthProto.HealthCheckResponse_ServingStatus>((resolve, reject) =>
      healthClient.check({ service: '' }, (e, r) => (e ? reject(e) : resolve(r.status))),
    );
    expect(status).toBe(healthProto.HealthCheckResponse_ServingStatus.SERVING);
    healthClient.close();
  });

  it('streams the endpoints of a Service: first message at once, then diffs, with identity for meshed pods', async () => {
    await admin.request(
      'POST',
      `/api/v1/namespaces/${ns}/services`,
      service('web', { ports: [{ name: 'http', port: 80, targetPort: 'http' }] }),
    );
    await createPod('web-0', '10.23.200.1', { app: 'web', 'minimesh.io/control-plane-ns': cpNs }, 'web');
    await createPod('web-1', '10.23.200.2', { app: 'web' }, 'web');
    const ep = (ip: string, pod: string, ready = true) => ({
      addresses: [ip],
      conditions: { ready },
      targetRef: { kind: 'Pod', namespace: ns, name: pod },
    });
    await putSlice(slice('web-a', 'web', [{ name: 'http', port: 8080 }], [ep('10.23.200.1', 'web-0')]));
    await until(
      'the index to hold web-a',
      () => dst.index.resolve({ namespace: ns, service: 'web', port: 80 }).endpoints.length === 1,
    );

    const s = get(fqdn('web', 80));
    expect(await next(s)).toEqual([`add 10.23.200.1:8080 id=${identityOf('web')} hint=h2`]);

    await putSlice(
      slice('web-a', 'web', [{ name: 'http', port: 8080 }], [ep('10.23.200.1', 'web-0'), ep('10.23.200.2', 'web-1')]),
    );
    expect(await next(s)).toEqual(['add 10.23.200.2:8080']);

    await putSlice(
      slice(
        'web-a',
        'web',
        [{ name: 'http', port: 8080 }],
        [ep('10.23.200.1', 'web-0', false), ep('10.23.200.2', 'web-1')],
      ),
    );
    expect(await next(s)).toEqual(['remove 10.23.200.1:8080']);

    // the pod is relabeled as meshed: its endpoint is re-sent with identity
    await admin.request(
      'PATCH',
      `/api/v1/namespaces/${ns}/pods/web-1`,
      { metadata: { labels: { 'minimesh.io/control-plane-ns': cpNs } } },
      'application/merge-patch+json',
    );
    expect(await next(s)).toEqual([`add 10.23.200.2:8080 id=${identityOf('web')} hint=h2`]);

    // metric labels carry pod, namespace, service, serviceaccount
    const again = get(fqdn('web', 80));
    const first = (await again.next()).update;
    expect(first?.$case).toBe('add');
    if (first?.$case === 'add') {
      expect(first.value.metricLabels).toEqual({ service: 'web', namespace: ns });
      expect(first.value.addrs[0]?.metricLabels).toMatchObject({
        pod: 'web-1',
        namespace: ns,
        serviceaccount: 'web',
        control_plane_ns: cpNs,
      });
      expect(first.value.addrs[0]?.weight).toBe(10000);
    }
    again.cancel();

    await admin.request('DELETE', `/api/v1/namespaces/${ns}/services/web`);
    expect(await next(s)).toEqual(['remove 10.23.200.2:8080']);
    s.cancel();
  });

  it('an unknown Service gets no_endpoints(exists=false); endpoints follow when it appears', async () => {
    const s = get(fqdn('later', 8080));
    expect(await next(s)).toEqual(['none exists=false']);
    await admin.request(
      'POST',
      `/api/v1/namespaces/${ns}/services`,
      service('later', { ports: [{ port: 8080, targetPort: 8080 }] }),
    );
    await putSlice(slice('later-a', 'later', [{ name: '', port: 8080 }], [{ addresses: ['10.23.201.1'] }]));
    expect(await next(s)).toEqual(['add 10.23.201.1:8080']);
    s.cancel();
  });

  it('IP queries, malformed authorities and ExternalName Services get InvalidArgument naming the expected form', async () => {
    for (const path of ['10.23.200.1:8080', 'web.example.com:80', `web.${ns}.svc.cluster.local:http`]) {
      const st = await get(path).status();
      expect(st.code, path).toBe(status.INVALID_ARGUMENT);
      expect(st.details).toContain('<service>.<namespace>.svc.cluster.local');
    }
    await admin.request(
      'POST',
      `/api/v1/namespaces/${ns}/services`,
      service('ext', { type: 'ExternalName', externalName: 'db.example.com' }),
    );
    await until('ext in the index', () => dst.index.getService(ns, 'ext'));
    const st = await get(fqdn('ext', 80)).status();
    expect(st.code).toBe(status.INVALID_ARGUMENT);
    expect(st.details).toContain('ExternalName');
  });

  it('GetProfile: a pod IP yields the endpoint with its identity; a ClusterIP yields the Service name', async () => {
    await createPod('api-0', '10.23.202.1', { app: 'api', 'minimesh.io/control-plane-ns': cpNs }, 'web');
    await until('api-0 in the index', () => dst.index.podByIp('10.23.202.1'));
    const p = getProfile('10.23.202.1:8080');
    const profile = await p.next();
    expect(fromTcpAddress(profile.endpoint?.addr)).toEqual({ ip: '10.23.202.1', port: 8080 });
    expect(profile.endpoint?.tlsIdentity?.serverName?.name).toBe(identityOf('web'));
    expect(profile.opaqueProtocol).toBe(false);
    p.cancel();

    const created = await admin.request<KubeObject>(
      'POST',
      `/api/v1/namespaces/${ns}/services`,
      service('db', { ports: [{ port: 5432, targetPort: 5432 }] }),
    );
    const clusterIp = created.spec.clusterIP as string;
    await admin.request(
      'PATCH',
      `/api/v1/namespaces/${ns}/services/db`,
      { metadata: { annotations: { 'config.minimesh.io/opaque-ports': '5432' } } },
      'application/merge-patch+json',
    );
    await until('db annotated in the index', () => dst.index.getService(ns, 'db')?.opaquePorts === '5432');
    const q = getProfile(`${clusterIp}:5432`);
    const byIp = await q.next();
    expect(byIp.fullyQualifiedName).toBe(`db.${ns}.svc.cluster.local`);
    expect(byIp.opaqueProtocol).toBe(true);
    // a change is pushed on the open stream
    await admin.request(
      'PATCH',
      `/api/v1/namespaces/${ns}/services/db`,
      { metadata: { annotations: { 'config.minimesh.io/opaque-ports': '3306' } } },
      'application/merge-patch+json',
    );
    expect((await q.next()).opaqueProtocol).toBe(false);
    q.cancel();
  });

  it('a cut watch connection is resumed, and an expired resourceVersion (410) relists', async () => {
    await admin.request(
      'POST',
      `/api/v1/namespaces/${ns}/services`,
      service('resume', { ports: [{ port: 80, targetPort: 8080 }] }),
    );
    await putSlice(slice('resume-a', 'resume', [{ name: '', port: 8080 }], [{ addresses: ['10.23.203.1'] }]));
    await until(
      'resume-a in the index',
      () => dst.index.resolve({ namespace: ns, service: 'resume', port: 80 }).endpoints.length === 1,
    );
    const s = get(fqdn('resume', 80));
    expect(await next(s)).toEqual(['add 10.23.203.1:8080']);

    const informer = dst.informers.endpointslice;
    const watches = informer.watchCount;
    const lists = informer.listCount;
    expect(await until('an open watch to abort', () => informer.abortWatch())).toBe(true);
    await until('the watch to be reopened', () => informer.watchCount > watches);
    await putSlice(
      slice(
        'resume-a',
        'resume',
        [{ name: '', port: 8080 }],
        [{ addresses: ['10.23.203.1'] }, { addresses: ['10.23.203.2'] }],
      ),
    );
    expect(await next(s)).toEqual(['add 10.23.203.2:8080']);
    expect(informer.listCount).toBe(lists);

    // Resume from a version the API server no longer has: it answers 410 Gone and the informer relists.
    (informer as unknown as { resourceVersion: string }).resourceVersion = '1';
    expect(await until('an open watch to abort', () => informer.abortWatch())).toBe(true);
    await until('a relist', () => informer.listCount > lists);
    await putSlice(slice('resume-a', 'resume', [{ name: '', port: 8080 }], [{ addresses: ['10.23.203.2'] }]));
    expect(await next(s)).toEqual(['remove 10.23.203.1:8080']);
    const metrics = await dst.admin?.registry.getSingleMetricAsString('destination_watch_restarts_total');
    expect(metrics).toMatch(/resource="endpointslices",reason="aborted"/);
    expect(metrics).toMatch(/resource="endpointslices",reason="expired"/);
    s.cancel();
  });

  it('a relist after a gap resets the index from the new list: what was deleted meanwhile is gone', async () => {
    await admin.request(
      'POST',
      `/api/v1/namespaces/${ns}/services`,
      service('gap', { ports: [{ port: 80, targetPort: 8080 }] }),
    );
    await putSlice(slice('gap-a', 'gap', [{ name: '', port: 8080 }], [{ addresses: ['10.23.204.1'] }]));
    await putSlice(slice('gap-b', 'gap', [{ name: '', port: 8080 }], [{ addresses: ['10.23.204.2'] }]));
    const index = new EndpointIndex();
    index.apply('service', {
      namespace: ns,
      name: 'gap',
      uid: '',
      type: 'ClusterIP',
      clusterIPs: [],
      ports: [{ name: '', port: 80, protocol: 'TCP', targetPort: 8080 }],
    });
    const events: string[] = [];
    index.subscribe(
      { namespace: ns, service: 'gap', port: 80 },
      {
        add: (_s, eps) => events.push(...eps.map((e) => `add ${e.ip}`)),
        remove: (a) => events.push(...a.map((e) => `remove ${e.ip}`)),
        noEndpoints: () => undefined,
      },
    );
    const sa = await saClient();
    const informerFor = () =>
      new Informer<SliceRecord>({
        client: sa,
        resource: 'endpointslices',
        path: RESOURCE_PATHS.endpointslice,
        transform: toSliceRecord,
        keyOf: keyOfObject,
        handler: {
          apply: (r) => index.apply('endpointslice', r),
          delete: (k) => index.delete('endpointslice', k),
          reset: (rs) => index.reset('endpointslice', rs),
        },
        logger,
      });
    const first = informerFor();
    first.start();
    await first.waitForSync();
    await first.stop(); // the gap: nobody watches
    expect(events.sort()).toEqual(['add 10.23.204.1', 'add 10.23.204.2']);
    events.length = 0;
    await admin.request('DELETE', `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/gap-a`);
    await putSlice(slice('gap-c', 'gap', [{ name: '', port: 8080 }], [{ addresses: ['10.23.204.3'] }]));
    const second = informerFor();
    second.start();
    await second.waitForSync();
    await second.stop();
    await sa.close();
    expect(events).toEqual(['add 10.23.204.3', 'remove 10.23.204.1']);
    expect(
      index
        .resolve({ namespace: ns, service: 'gap', port: 80 })
        .endpoints.map((e) => e.ip)
        .sort(),
    ).toEqual(['10.23.204.2', '10.23.204.3']);
  });

  it('cancelled streams release their subscriptions', async () => {
    await until(
      'earlier streams released',
      () =>
        dst.index.listenerCount() === 0 &&
        dst.metrics.openStreams.get().then((m) => m.values.every((v) => v.value === 0)),
    );
    const streams = Array.from({ length: 20 }, () => get(fqdn('resume', 80)));
    await Promise.all(streams.map((s) => s.next()));
    expect(dst.index.listenerCount()).toBe(20);
    for (const s of streams) s.cancel();
    await until('subscriptions released', () => dst.index.listenerCount() === 0);
  });

  it('an ExternalWorkload selected by a Service is mirrored into an EndpointSlice by the leader and served with its identity', async () => {
    await until('replica-a leads', () => dst.elector.isLeader);
    await admin.request(
      'POST',
      `/api/v1/namespaces/${ns}/services`,
      service('legacy', { selector: { app: 'legacy' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] }),
    );
    await until('legacy in the index', () => dst.index.getService(ns, 'legacy'));
    const s = get(fqdn('legacy', 80));
    expect(await next(s)).toEqual(['none exists=true']);
    const vmIdentity = `vm-1.${ns}.serviceaccount.identity.${cpNs}.cluster.local`;
    await admin.request('POST', `/apis/workload.minimesh.io/v1beta1/namespaces/${ns}/externalworkloads`, {
      apiVersion: 'workload.minimesh.io/v1beta1',
      kind: 'ExternalWorkload',
      metadata: { name: 'vm-1', namespace: ns, labels: { app: 'legacy' } },
      spec: {
        meshTLS: { identity: vmIdentity, serverName: vmIdentity },
        workloadIPs: [{ ip: '10.23.250.10' }],
        ports: [{ name: 'http', port: 8080 }],
      },
    });
    expect(await next(s)).toEqual([`add 10.23.250.10:8080 id=${vmIdentity} hint=h2`]);
    const slices = await admin.request<KubeObject>(
      'GET',
      `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io/service-name=legacy`,
    );
    const mirrored = slices.items.filter(
      (x: KubeObject) => x.metadata.labels?.['endpointslice.kubernetes.io/managed-by'] === MIRROR_MANAGER,
    );
    expect(mirrored).toHaveLength(1);
    expect(mirrored[0].metadata.ownerReferences[0]).toMatchObject({ kind: 'Service', name: 'legacy' });
    expect(mirrored[0].endpoints[0].targetRef).toMatchObject({ kind: 'ExternalWorkload', name: 'vm-1' });

    // the workload stops matching: the mirror empties its slice
    await admin.request(
      'PATCH',
      `/apis/workload.minimesh.io/v1beta1/namespaces/${ns}/externalworkloads/vm-1`,
      { metadata: { labels: { app: 'other' } } },
      'application/merge-patch+json',
    );
    expect(await next(s)).toEqual(['remove 10.23.250.10:8080']);
    s.cancel();
  });

  it('the audit log shows watch streams (never polling), Lease updates, and no RBAC denial for its ServiceAccount', async () => {
    const user = `system:serviceaccount:${cpNs}:${SA}`;
    await until(
      'lease updates in the audit log',
      () =>
        readAuditEvents((e) => e.user?.username === user && e.verb === 'update' && e.objectRef?.resource === 'leases')
          .length >= 2,
    );
    const events = readAuditEvents((e) => e.user?.username === user);
    const watched = new Set(
      events
        .filter(
          (e) =>
            e.verb === 'watch' && /[?&]watch=true/.test(e.requestURI) && /allowWatchBookmarks=true/.test(e.requestURI),
        )
        .map((e) => e.objectRef?.resource),
    );
    expect([...watched].sort()).toEqual(['endpointslices', 'externalworkloads', 'pods', 'services']);
    for (const [kind, resource] of [
      ['service', 'services'],
      ['pod', 'pods'],
      ['externalworkload', 'externalworkloads'],
    ] as const) {
      const lists = new Set(
        events.filter((e) => e.verb === 'list' && e.objectRef?.resource === resource).map((e) => e.auditID),
      ).size;
      expect(lists, `${resource} lists`).toBe(dst.informers[kind].listCount);
    }
    expect(
      events
        .filter((e) => e.annotations?.['authorization.k8s.io/decision'] === 'forbid')
        .map((e) => `${e.verb} ${e.requestURI}`),
    ).toEqual([]);
    expect(
      events.some((e) => e.objectRef?.resource === 'leases' && e.userAgent?.startsWith('minimesh-destination/')),
    ).toBe(true);
  });

  it('two replicas elect one leader; the other takes over within the lease duration when the first stops; the lease is released on shutdown', async () => {
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${cpNs}/leases/minimesh-destination-endpoint-write`;
    const b = await startDestination(await options('replica-b'));
    try {
      await b.synced();
      await sleep(LEASE.retryPeriodMs * 3);
      expect(dst.elector.isLeader).toBe(true);
      expect(b.elector.isLeader).toBe(false);
      expect((await admin.request<KubeObject>('GET', leasePath)).spec.holderIdentity).toBe('replica-a');
      const bMetrics = await b.admin?.registry.getSingleMetricAsString('destination_leader');
      expect(bMetrics).toMatch(/destination_leader 0/);

      // replica-a dies without releasing: replica-b must wait for the lease to expire, and no longer.
      // Both bounds run from replica-a's last renewal (the renewTime it wrote): close() finishes a
      // renewal already in flight, so a time taken before close() would count that request as well.
      await dst.close({ release: false });
      const last = await admin.request<KubeObject>('GET', leasePath);
      expect(last.spec.holderIdentity).toBe('replica-a');
      const lastRenewal = Date.parse(last.spec.renewTime as string);
      await until('replica-b leads', () => b.elector.isLeader, LEASE.durationMs + 5000);
      const tookMs = Date.now() - lastRenewal;
      // b dates that renewal to its read before the one that saw it (at most a retry period back) and
      // reads again when the duration has run from there: never sooner than a retry period before the
      // duration, and no later than the duration plus the requests' time (docs/destination.md).
      expect(tookMs).toBeGreaterThanOrEqual(LEASE.durationMs - LEASE.retryPeriodMs);
      expect(tookMs).toBeLessThanOrEqual(LEASE.durationMs + 1000);
      const lease = await admin.request<KubeObject>('GET', leasePath);
      expect(lease.spec.holderIdentity).toBe('replica-b');
      expect(lease.spec.leaseTransitions).toBeGreaterThanOrEqual(1);
    } finally {
      await b.close({ release: true });
    }
    expect((await admin.request<KubeObject>('GET', leasePath)).spec.holderIdentity ?? '').toBe('');
  });
});

describe('the minimesh-destination binary', () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGKILL');
  });

  const freePort = () =>
    new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as { port: number }).port;
        s.close(() => resolve(port));
      });
    });

  it('--help exits 0; a bad flag exits 2 with one line naming it', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const c = spawn(process.execPath, [mainJs, ...args]);
        let out = '';
        let err = '';
        c.stdout.on('data', (d: Buffer) => (out += d.toString()));
        c.stderr.on('data', (d: Buffer) => (err += d.toString()));
        c.on('exit', (code) => resolve({ code, out, err }));
      });
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    for (const flag of [
      '--addr',
      '--admin-addr',
      '--controller-namespace',
      '--cluster-domain',
      '--identity-trust-domain',
      '--default-opaque-ports',
      '--enable-h2-upgrade',
      '--stream-queue-capacity',
      '--kubeconfig',
      '--lease-name',
      '--lease-duration',
      '--lease-renew-deadline',
      '--lease-retry-period',
      '--log-level',
      '--log-format',
    ]) {
      expect(help.out).toContain(flag);
    }
    const bad = await run(['--default-opaque-ports', 'mysql']);
    expect(bad.code).toBe(2);
    expect(bad.err.trim().split('\n')).toHaveLength(1);
    expect(bad.err).toContain('--default-opaque-ports');
  });

  it('serves Get with its ServiceAccount kubeconfig, ready after sync, and releases its lease on SIGTERM', async () => {
    const [grpcPort, adminPort] = [await freePort(), await freePort()];
    const lease = `bin-${suffix}`;
    child = spawn(
      process.execPath,
      [
        mainJs,
        '--kubeconfig',
        kubeconfig,
        '--addr',
        `127.0.0.1:${grpcPort}`,
        '--admin-addr',
        `127.0.0.1:${adminPort}`,
        '--controller-namespace',
        cpNs,
        '--lease-name',
        lease,
        '--log-level',
        'debug',
      ],
      { env: { ...process.env, POD_NAME: 'destination-bin-0' } },
    );
    let logs = '';
    child.stdout?.on('data', (d: Buffer) => (logs += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (logs += d.toString()));
    // On failure, say what the binary logged: a CI run on a loaded machine is the place this is read.
    onTestFailed(() => console.error(`minimesh-destination's log:\n${logs}`));
    await until(
      'binary ready',
      async () => (await fetch(`http://127.0.0.1:${adminPort}/ready`)).status === 200,
      60_000,
    );
    // The log lines are written by the child and read here through a pipe: wait for them rather than
    // racing the readiness probe against the pipe.
    await until('the sync log line', () => logs.includes('caches synced'), 10_000);
    await until(
      'the debug line for the EndpointSlice',
      () => /Adding ES mm-dst-app-[0-9a-f]+\/resume-a/.test(logs),
      10_000,
    );
    const c = dstClient(grpcPort);
    const s = new StreamReader<destination.Update>(c.get({ scheme: '', path: fqdn('resume', 80), contextToken: '' }));
    expect(describeUpdate(await s.next())).toEqual(['add 10.23.203.2:8080']);
    s.cancel();
    c.close();
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${cpNs}/leases/${lease}`;
    await until(
      'the binary holds its lease',
      async () => (await admin.get(leasePath))?.spec?.holderIdentity === 'destination-bin-0',
    );
    const exited = new Promise<number | null>((resolve) => child?.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect((await admin.get(leasePath))?.spec?.holderIdentity ?? '').toBe('');
  });
});
