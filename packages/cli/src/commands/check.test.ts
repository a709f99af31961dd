// check --pre, --proxy and --wait against the in-memory API server of @minimesh/kube/testing: what the
// command asks the API and what it makes of the answers.
import { createFakeKubeClient, type FakeKubeClient } from '@minimesh/kube/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { createMeshCerts, type MeshCerts } from '../certs.js';
import { CERT_EXPIRY_METRIC } from '../check/proxy.js';
import type { CheckResult } from '../check/types.js';
import { collectChecks, retryChecks } from './check.js';

const OPTS = { namespace: 'minimesh', warnDays: 60, readyTimeoutMs: 1000 };
const line = (r: CheckResult): string => `${r.status} ${r.description}`;
let certs: MeshCerts;
beforeAll(async () => {
  certs = await createMeshCerts();
});

function preApi(allowed: (resource: string) => boolean): FakeKubeClient {
  const api = createFakeKubeClient();
  api.handle('GET', '/version', () => ({ status: 200, body: { gitVersion: 'v1.33.13' } }));
  api.handle('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', (req) => {
    const attrs = (req.body as { spec: { resourceAttributes: { resource: string; verb: string } } }).spec
      .resourceAttributes;
    return { status: 201, body: { status: { allowed: attrs.verb === 'create' && allowed(attrs.resource) } } };
  });
  api.put('/api/v1/namespaces', { metadata: { name: 'default' } });
  return api;
}

describe('check --pre against a fake API', () => {
  it('passes on an empty cluster that admits a NET_ADMIN pod (dry run only)', async () => {
    const api = preApi(() => true);
    const dryRuns: unknown[] = [];
    api.handle('POST', '/api/v1/namespaces/default/pods?dryRun=All', (req) => {
      dryRuns.push(req.body);
      return { status: 201, body: req.body };
    });
    const r = await collectChecks(api, 'https://fake', { ...OPTS, mode: 'pre' });
    expect(r.filter((x) => x.status !== 'ok').map(line)).toEqual([]);
    expect(r.map(line)).toContain('ok can create CustomResourceDefinitions');
    expect(r.find((x) => x.category === 'pre-kubernetes-capability')?.description).toBe(
      'pods in namespace default may have the NET_ADMIN and NET_RAW capabilities (proxy-init)',
    );
    expect(JSON.stringify(dryRuns)).toContain('"add":["NET_ADMIN","NET_RAW"]');
    expect(api.object('/api/v1/pods', 'default', 'minimesh-pre-check-')).toBeUndefined();
    expect(api.calls.filter((c) => c.startsWith('POST /apis/authorization.k8s.io'))).toHaveLength(13);
  });

  it('fails on an installed control plane, missing RBAC and a namespace whose Pod Security refuses NET_ADMIN', async () => {
    const api = preApi((resource) => resource !== 'clusterroles');
    api.put('/api/v1/namespaces', {
      metadata: { name: 'minimesh', labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    api.put('/apis/apps/v1/deployments', {
      metadata: {
        name: 'minimesh-identity',
        namespace: 'minimesh',
        labels: { 'minimesh.io/control-plane-component': 'identity' },
      },
    });
    api.handle('POST', '/api/v1/namespaces/minimesh/pods?dryRun=All', () => ({
      status: 403,
      body: { kind: 'Status', message: 'pods is forbidden: violates PodSecurity "restricted:latest"' },
    }));
    const r = await collectChecks(api, 'https://fake', { ...OPTS, mode: 'pre' });
    expect(r.filter((x) => x.status === 'fail').map((x) => `${x.description}: ${x.detail}`)).toEqual([
      'no minimesh control plane is installed in namespace minimesh: found Deployment minimesh/minimesh-identity',
      'can create ClusterRoles: not allowed',
      'pods in namespace minimesh may have the NET_ADMIN and NET_RAW capabilities (proxy-init): a dry-run pod with them was refused: pods is forbidden: violates PodSecurity "restricted:latest"',
    ]);
  });
});

function meshedPod(name: string, ready: boolean): Record<string, unknown> {
  return {
    metadata: {
      name,
      namespace: 'app',
      labels: { 'minimesh.io/control-plane-ns': 'minimesh' },
      annotations: { 'minimesh.io/proxy-version': '0.1.0' },
    },
    spec: {
      initContainers: [
        {
          name: 'minimesh-proxy',
          image: 'ghcr.io/minimesh/proxy:0.1.0',
          env: [{ name: 'MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS', value: certs.caCrt }],
        },
      ],
      containers: [{ name: 'app' }],
    },
    status: { phase: 'Running', initContainerStatuses: [{ name: 'minimesh-proxy', ready }] },
  };
}

/** The control plane's trust roots ConfigMap and issuer Secret (certificate only), as the chart makes them. */
function controlPlaneApi(trust: { caCrt: string; issuerCrt: string }): FakeKubeClient {
  const api = createFakeKubeClient();
  api.put('/api/v1/configmaps', {
    metadata: { name: 'minimesh-identity-trust-roots', namespace: 'minimesh' },
    data: { 'ca-bundle.crt': trust.caCrt },
  });
  api.put('/api/v1/secrets', {
    metadata: { name: 'minimesh-identity-issuer', namespace: 'minimesh' },
    data: { 'crt.pem': Buffer.from(trust.issuerCrt).toString('base64') },
  });
  return api;
}

/** The pod proxy answers app/<pod>'s /metrics with its certificate's expiry (seconds since the epoch). */
function serveCertExpiry(api: FakeKubeClient, pod: string, expires: number): void {
  api.handle('GET', `/api/v1/namespaces/app/pods/${pod}:4191/proxy/metrics`, () => ({
    status: 200,
    body: `${CERT_EXPIRY_METRIC} ${expires}\n`,
  }));
}

describe('check --proxy against a fake API', () => {
  function proxyApi(): FakeKubeClient {
    const api = controlPlaneApi(certs);
    api.put('/apis/apps/v1/deployments', {
      metadata: {
        name: 'minimesh-destination',
        namespace: 'minimesh',
        labels: { 'minimesh.io/control-plane-ns': 'minimesh', 'app.kubernetes.io/version': '0.1.0' },
      },
    });
    return api;
  }

  it("reads each proxy's metrics through the API server's pod proxy and checks every pod", async () => {
    const api = proxyApi();
    api.put('/api/v1/pods', meshedPod('web-1', true));
    api.put('/api/v1/pods', meshedPod('web-2', false));
    // Another mesh's pod in the same namespace is not ours.
    api.put('/api/v1/pods', {
      ...meshedPod('theirs', false),
      metadata: { name: 'theirs', namespace: 'app', labels: { 'minimesh.io/control-plane-ns': 'other' } },
    });
    const expires = Date.now() / 1000 + 86_400;
    serveCertExpiry(api, 'web-1', expires);
    api.handle('GET', '/api/v1/namespaces/app/pods/web-2:4191/proxy/metrics', () => ({ status: 200, body: 'x 1\n' }));
    const { proxyChecksOnly } = await import('./check.js');
    const r = await proxyChecksOnly(api, { ...OPTS, mode: 'proxy', dataPlaneNamespace: 'app' });
    expect(api.calls).toContain(
      'GET /api/v1/namespaces/app/pods?labelSelector=minimesh.io%2Fcontrol-plane-ns%3Dminimesh',
    );
    expect(r.map(line)).toEqual([
      'ok data-plane proxies exist',
      'fail data-plane proxies are ready',
      'fail data-plane proxies hold a valid certificate',
      "ok data-plane proxies' certificates chain to their trust anchors",
      "ok data-plane proxies have the control plane's current trust anchors",
      "ok data-plane proxies run the control plane's version",
    ]);
    expect(r[1]?.detail).toBe('app/web-2: not ready');
    expect(r[2]?.detail).toBe(`app/web-2: the proxy has no certificate yet (no ${CERT_EXPIRY_METRIC})`);
  });
});

describe('check --proxy --wait against a fake API', () => {
  it('runs again while a proxy starts, and passes once it is ready', async () => {
    const api = controlPlaneApi(certs);
    api.put('/api/v1/pods', meshedPod('web-1', false));
    serveCertExpiry(api, 'web-1', Date.now() / 1000 + 86_400);
    const { proxyChecksOnly } = await import('./check.js');
    const opts = { ...OPTS, mode: 'proxy' as const, dataPlaneNamespace: 'app' };
    let rounds = 0;
    const told: string[] = [];
    const r = await retryChecks(
      async () => {
        rounds++;
        return proxyChecksOnly(api, opts);
      },
      {
        waitMs: 60_000,
        // The kubelet marks the proxy ready while check pauses.
        pause: async () => void api.put('/api/v1/pods', meshedPod('web-1', true)),
        onRetry: (failing) => told.push(...failing.map((f) => `${f.description}: ${f.detail}`)),
      },
    );
    expect(rounds).toBe(2);
    expect(told).toEqual(['data-plane proxies are ready: app/web-1: not ready']);
    expect(r.filter((x) => x.status === 'fail')).toEqual([]);
  });

  it('does not wait for a pod whose trust anchors the issuer does not chain to', async () => {
    const other = await createMeshCerts();
    const api = controlPlaneApi(other);
    api.put('/api/v1/pods', meshedPod('web-1', true));
    serveCertExpiry(api, 'web-1', Date.now() / 1000 + 86_400);
    const { proxyChecksOnly } = await import('./check.js');
    let rounds = 0;
    const r = await retryChecks(
      async () => (rounds++, proxyChecksOnly(api, { ...OPTS, mode: 'proxy', dataPlaneNamespace: 'app' })),
      { waitMs: 60_000, pause: async () => undefined },
    );
    expect(rounds).toBe(1);
    expect(
      r.filter((x) => x.status === 'fail' || x.status === 'warn').map((x) => `${x.status} ${x.description}`),
    ).toEqual([
      "fail data-plane proxies' certificates chain to their trust anchors",
      "warn data-plane proxies have the control plane's current trust anchors",
    ]);
  });
});

describe('check --wait', () => {
  const failing = (retry: boolean): CheckResult[] => [
    { category: 'c', description: 'd', status: 'fail', detail: 'not yet', retry },
  ];
  const passing: CheckResult[] = [{ category: 'c', description: 'd', status: 'ok' }];

  it('runs failing checks again until they pass', async () => {
    let now = 0;
    let runs = 0;
    const pauses: number[] = [];
    const told: number[] = [];
    const r = await retryChecks(async () => (++runs < 4 ? failing(true) : passing), {
      waitMs: 300_000,
      clock: () => now,
      pause: async (ms) => {
        pauses.push(ms);
        now += ms;
      },
      onRetry: (f, remaining) => told.push(remaining),
    });
    expect(r).toEqual(passing);
    expect(runs).toBe(4);
    expect(pauses).toEqual([1000, 2000, 4000]);
    expect(told).toEqual([300_000, 299_000, 297_000]);
  });

  it('gives up when the time is over, with the last results', async () => {
    let now = 0;
    let runs = 0;
    const r = await retryChecks(async () => (runs++, failing(true)), {
      waitMs: 30_000,
      clock: () => now,
      pause: async (ms) => void (now += ms),
    });
    expect(r[0]?.status).toBe('fail');
    // 1 + 2 + 4 + 8 + 10 + 5 (the rest) seconds of pauses: 7 runs.
    expect(runs).toBe(7);
    expect(now).toBe(30_000);
  });

  it('does not wait on a failure that cannot pass by itself, nor with --wait 0', async () => {
    let runs = 0;
    await retryChecks(async () => (runs++, failing(false)), { waitMs: 300_000, pause: async () => undefined });
    expect(runs).toBe(1);
    await retryChecks(async () => (runs++, failing(true)), { waitMs: 0, pause: async () => undefined });
    expect(runs).toBe(2);
  });
});
