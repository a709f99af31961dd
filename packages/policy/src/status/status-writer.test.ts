// The route-status writer against the in-memory API server: only the leader writes; a write is a merge
// patch of status.parents on /status with the route's resourceVersion as precondition; other
// controllers' entries stay; an unchanged status is not written again (also not while the watch has
// not shown the last write yet); a route changed meanwhile (409) is retried on a later pass.
import { createFakeKubeClient, type FakeKubeClient } from '@minimesh/kube/testing';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PolicyIndex } from '../index/policy-index.js';
import { createPolicyMetrics } from '../metrics.js';
import { TEST_CLUSTER } from '../testing.js';
import { CONTROLLER_NAME } from './route-status.js';
import { RouteStatusWriter } from './status-writer.js';

const ROUTES = '/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes';
const logger = createLogger({ name: 'test', level: 'silent', format: 'json' });

const SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'shop' },
  spec: { clusterIP: '10.96.0.10', ports: [{ port: 80 }] },
};
const OTHER = {
  parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' },
  controllerName: 'example.com/gateway',
  conditions: [
    { type: 'Accepted', status: 'True', reason: 'Accepted', message: '', lastTransitionTime: '2025-01-01T00:00:00Z' },
  ],
};

function setup(leader: { now: boolean }) {
  const api = createFakeKubeClient();
  const index = new PolicyIndex(TEST_CLUSTER);
  index.apply('Service', SERVICE);
  const metrics = createPolicyMetrics(new Registry());
  const writer = new RouteStatusWriter({
    api,
    index,
    logger,
    metrics,
    isLeader: () => leader.now,
    now: () => new Date('2026-03-01T10:00:00.123Z'),
  });
  /** What an informer would do: the index gets the object as the API server has it. */
  const sync = (name: string) => index.apply('GatewayHTTPRoute', api.object(ROUTES, 'shop', name));
  const route = (name: string, backend: string) => {
    api.put(ROUTES, {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name, namespace: 'shop', generation: 1 },
      spec: {
        parentRefs: [{ group: '', kind: 'Service', name: 'web', port: 80 }],
        rules: [{ backendRefs: [{ name: backend, port: 80 }] }],
      },
      status: { parents: [OTHER] },
    });
    sync(name);
  };
  return { api, index, writer, sync, route, metrics };
}

const patches = (api: FakeKubeClient) => api.calls.filter((c) => c.startsWith('PATCH'));
const statusOf = (api: FakeKubeClient, name: string) =>
  (
    api.object(ROUTES, 'shop', name) as {
      status: { parents: Array<{ controllerName: string; conditions: Array<Record<string, unknown>> }> };
    }
  ).status;

describe('RouteStatusWriter', () => {
  it('writes nothing while another replica leads', async () => {
    const t = setup({ now: false });
    t.route('r', 'web');
    expect(await t.writer.pass()).toBe(0);
    expect(patches(t.api)).toEqual([]);
  });

  it('the leader writes Accepted and ResolvedRefs next to the other controllers’ entries, once', async () => {
    const t = setup({ now: true });
    t.route('r', 'gone');
    expect(await t.writer.pass()).toBe(1);
    expect(patches(t.api)).toEqual([`PATCH ${ROUTES}/r/status`]);
    const parents = statusOf(t.api, 'r').parents;
    expect(parents[0]).toEqual(OTHER);
    expect(parents[1]).toEqual({
      parentRef: { group: '', kind: 'Service', name: 'web', port: 80 },
      controllerName: CONTROLLER_NAME,
      conditions: [
        {
          type: 'Accepted',
          status: 'True',
          reason: 'Accepted',
          message: '',
          lastTransitionTime: '2026-03-01T10:00:00Z',
          observedGeneration: 1,
        },
        {
          type: 'ResolvedRefs',
          status: 'False',
          reason: 'BackendNotFound',
          message: 'backendRef Service shop/gone does not exist',
          lastTransitionTime: '2026-03-01T10:00:00Z',
          observedGeneration: 1,
        },
      ],
    });
    // Before the watch shows the write, the same write is not sent again; after, nothing differs.
    expect(await t.writer.pass()).toBe(0);
    t.sync('r');
    expect(await t.writer.pass()).toBe(0);
    expect(patches(t.api)).toHaveLength(1);
    expect(await t.metrics.statusPatches.get()).toMatchObject({ values: [{ labels: { result: 'ok' }, value: 1 }] });
  });

  it('a change rewrites only the condition that changed; the unchanged one keeps its transition time', async () => {
    const t = setup({ now: true });
    t.route('r', 'gone');
    await t.writer.pass();
    t.sync('r');
    t.index.apply('Service', {
      ...SERVICE,
      metadata: { name: 'gone', namespace: 'shop' },
      spec: { clusterIP: '10.96.0.11', ports: [{ port: 80 }] },
    });
    const later = new RouteStatusWriter({
      api: t.api,
      index: t.index,
      logger,
      isLeader: () => true,
      now: () => new Date('2026-03-02T00:00:00Z'),
    });
    expect(await later.pass()).toBe(1);
    const [accepted, refs] = statusOf(t.api, 'r').parents[1]!.conditions;
    expect(accepted).toMatchObject({ status: 'True', lastTransitionTime: '2026-03-01T10:00:00Z' });
    expect(refs).toMatchObject({ status: 'True', reason: 'ResolvedRefs', lastTransitionTime: '2026-03-02T00:00:00Z' });
  });

  it('a route that changed since it was read answers 409: counted, nothing written, tried again later', async () => {
    const t = setup({ now: true });
    t.route('r', 'web');
    // The API server has a newer version than the index.
    await t.api.requestOk('PATCH', `${ROUTES}/r`, { metadata: { labels: { x: 'y' } } });
    expect(await t.writer.pass()).toBe(0);
    expect(await t.metrics.statusPatches.get()).toMatchObject({
      values: [{ labels: { result: 'conflict' }, value: 1 }],
    });
    expect(statusOf(t.api, 'r').parents).toEqual([OTHER]);
    t.sync('r');
    expect(await t.writer.pass()).toBe(1);
    expect(statusOf(t.api, 'r').parents).toHaveLength(2);
  });

  it('EgressNetworks: Accepted, and ClusterNetworksExcluded when they reach into the cluster; others kept', async () => {
    const t = setup({ now: true });
    const NETS = '/apis/policy.minimesh.io/v1alpha1/namespaces/minimesh/egressnetworks';
    const foreign = {
      type: 'Example',
      status: 'True',
      reason: 'Other',
      message: '',
      lastTransitionTime: '2025-01-01T00:00:00Z',
    };
    t.api.put(NETS, {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'EgressNetwork',
      metadata: { name: 'wide', namespace: 'minimesh', generation: 2 },
      spec: { trafficPolicy: 'Deny', networks: [{ cidr: '0.0.0.0/0' }] },
      status: { conditions: [foreign] },
    });
    const sync = () => t.index.apply('EgressNetwork', t.api.object(NETS, 'minimesh', 'wide'));
    sync();
    expect(await t.writer.pass()).toBe(1);
    expect(patches(t.api)).toEqual([`PATCH ${NETS}/wide/status`]);
    const conditions = (t.api.object(NETS, 'minimesh', 'wide') as { status: { conditions: unknown[] } }).status
      .conditions;
    expect(conditions).toEqual([
      foreign,
      {
        type: 'Accepted',
        status: 'True',
        reason: 'Accepted',
        message: '',
        lastTransitionTime: '2026-03-01T10:00:00Z',
        observedGeneration: 2,
      },
      {
        type: 'ClusterNetworksExcluded',
        status: 'True',
        reason: 'EgressReasonNetworkOverlap',
        message:
          'networks reach into the cluster networks 10.0.0.0/8: traffic to them is never egress; this EgressNetwork applies to the rest',
        lastTransitionTime: '2026-03-01T10:00:00Z',
        observedGeneration: 2,
      },
    ]);
    sync();
    expect(await t.writer.pass()).toBe(0);
    // Narrowed to the outside: the overlap condition goes, Accepted keeps its transition time.
    await t.api.requestOk('PATCH', `${NETS}/wide`, { spec: { networks: [{ cidr: '203.0.113.0/24' }] } });
    sync();
    expect(await t.writer.pass()).toBe(1);
    expect(
      (
        t.api.object(NETS, 'minimesh', 'wide') as { status: { conditions: Array<{ type: string }> } }
      ).status.conditions.map((c) => c.type),
    ).toEqual(['Example', 'Accepted']);
  });

  it('writes TLSRoute and TCPRoute status on their own /status paths: Accepted, and the one a higher kind beats', async () => {
    const t = setup({ now: true });
    const GW = '/apis/gateway.networking.k8s.io/v1/namespaces/shop';
    const parentRefs = [{ group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'out', port: 443 }];
    t.api.put('/apis/policy.minimesh.io/v1alpha1/namespaces/shop/egressnetworks', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'EgressNetwork',
      metadata: { name: 'out', namespace: 'shop' },
      spec: { trafficPolicy: 'Deny' },
    });
    t.index.apply(
      'EgressNetwork',
      t.api.object('/apis/policy.minimesh.io/v1alpha1/namespaces/shop/egressnetworks', 'shop', 'out'),
    );
    t.api.put(`${GW}/tlsroutes`, {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'TLSRoute',
      metadata: { name: 'sni', namespace: 'shop', generation: 1 },
      spec: { parentRefs, hostnames: ['api.example'], rules: [{ backendRefs: [] }] },
    });
    t.api.put(`${GW}/tcproutes`, {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'TCPRoute',
      metadata: { name: 'raw', namespace: 'shop', generation: 1 },
      spec: { parentRefs, rules: [{ backendRefs: [] }] },
    });
    t.index.apply('TLSRoute', t.api.object(`${GW}/tlsroutes`, 'shop', 'sni'));
    t.index.apply('TCPRoute', t.api.object(`${GW}/tcproutes`, 'shop', 'raw'));
    await t.writer.pass();
    expect(
      patches(t.api)
        .filter((c) => c.includes('route'))
        .sort(),
    ).toEqual([`PATCH ${GW}/tcproutes/raw/status`, `PATCH ${GW}/tlsroutes/sni/status`]);
    const accepted = (path: string, name: string) =>
      (
        t.api.object(path, 'shop', name) as {
          status: { parents: Array<{ conditions: Array<Record<string, unknown>> }> };
        }
      ).status.parents.map((p) => p.conditions.map((c) => `${c.type}=${c.status} ${c.reason} ${c.message}`.trim()));
    expect(accepted(`${GW}/tlsroutes`, 'sni')).toEqual([['Accepted=True Accepted', 'ResolvedRefs=True ResolvedRefs']]);
    expect(accepted(`${GW}/tcproutes`, 'raw')).toEqual([
      [
        'Accepted=False RouteReasonConflicted TLSRoutes of namespace shop hold EgressNetwork shop/out port 443 (TLSRoute wins over TCPRoute)',
        'ResolvedRefs=True ResolvedRefs',
      ],
    ]);
  });

  it('an index change while leading makes a pass soon after (debounced)', async () => {
    const leader = { now: true };
    const api = createFakeKubeClient();
    const index = new PolicyIndex(TEST_CLUSTER, { onChange: (kind) => writer.indexChanged(kind) });
    const writer = new RouteStatusWriter({ api, index, logger, isLeader: () => leader.now, debounceMs: 5 });
    index.apply('Service', SERVICE);
    api.put(ROUTES, {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'n', namespace: 'shop' },
      spec: { parentRefs: [{ group: '', kind: 'Service', name: 'web' }] },
    });
    index.apply('GatewayHTTPRoute', api.object(ROUTES, 'shop', 'n'));
    await new Promise((r) => setTimeout(r, 100));
    expect(api.calls.filter((c) => c.startsWith('PATCH'))).toEqual([`PATCH ${ROUTES}/n/status`]);
    await writer.stop();
  });

  it('pod and authorization changes make no pass (statuses do not depend on them); a Service change does', async () => {
    const api = createFakeKubeClient();
    const index = new PolicyIndex(TEST_CLUSTER, { onChange: (kind) => writer.indexChanged(kind) });
    const writer = new RouteStatusWriter({ api, index, logger, isLeader: () => true, debounceMs: 1 });
    let passes = 0;
    const pass = writer.pass.bind(writer);
    writer.pass = () => {
      passes++;
      return pass();
    };
    const settle = () => new Promise((r) => setTimeout(r, 30));
    const pod = (name: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'shop', labels: { app: 'web' } },
      spec: { containers: [{ name: 'app', ports: [{ name: 'http', containerPort: 8080 }] }] },
    });
    index.apply('Pod', pod('web-1'));
    index.apply('Pod', pod('web-2'));
    index.delete('Pod', 'shop', 'web-1');
    index.reset('Pod', [pod('web-3')]);
    index.apply('AuthorizationPolicy', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'ap', namespace: 'shop' },
      spec: { targetRef: { kind: 'Namespace', name: 'shop' }, requiredAuthenticationRefs: [] },
    });
    await settle();
    expect(passes).toBe(0);
    index.apply('Service', SERVICE);
    await settle();
    expect(passes).toBe(1);
    index.apply('Server', {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'Server',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http' },
    });
    await settle();
    expect(passes).toBe(2);
    await writer.stop();
  });
});
