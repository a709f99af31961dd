import { beforeAll, describe, expect, it } from 'vitest';
import { createMeshCerts, type MeshCerts } from '../certs.js';
import { checkProxies, CERT_EXPIRY_METRIC, metricValue, type MeshedPodLike, type ProxyCheckInput } from './proxy.js';

const NOW = new Date('2026-11-27T10:00:00Z');
let certs: MeshCerts;
let other: MeshCerts;
beforeAll(async () => {
  [certs, other] = await Promise.all([createMeshCerts(), createMeshCerts()]);
});

function pod(
  name: string,
  over: { ready?: boolean; version?: string; anchors?: string; native?: boolean } = {},
): MeshedPodLike {
  const proxy = {
    name: 'minimesh-proxy',
    image: `ghcr.io/minimesh/proxy:${over.version ?? '0.1.0'}`,
    env: [{ name: 'MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS', value: over.anchors ?? certs.caCrt }],
  };
  const status = { name: 'minimesh-proxy', ready: over.ready ?? true, restartCount: 0 };
  const native = over.native ?? true;
  return {
    metadata: { name, namespace: 'app', annotations: { 'minimesh.io/proxy-version': over.version ?? '0.1.0' } },
    spec: native
      ? { initContainers: [{ name: 'minimesh-init' }, proxy], containers: [{ name: 'app' }] }
      : { containers: [proxy, { name: 'app' }] },
    status: native
      ? { phase: 'Running', initContainerStatuses: [status], containerStatuses: [{ name: 'app', ready: true }] }
      : { phase: 'Running', containerStatuses: [status, { name: 'app', ready: true }] },
  };
}

const metrics = (expiresAt: Date): { text: string } => ({
  text: `# HELP ${CERT_EXPIRY_METRIC} x\n# TYPE ${CERT_EXPIRY_METRIC} gauge\n${CERT_EXPIRY_METRIC} ${expiresAt.getTime() / 1000}\nrequest_total{direction="inbound"} 3\n`,
});
const inADay = new Date(NOW.getTime() + 24 * 3_600_000);

function input(pods: MeshedPodLike[], over: Partial<ProxyCheckInput> = {}): ProxyCheckInput {
  return {
    namespace: 'app',
    pods,
    metrics: new Map(pods.map((p) => [`app/${p.metadata?.name}`, metrics(inADay)])),
    controlPlaneVersions: ['0.1.0'],
    trustAnchorsPem: certs.caCrt,
    issuerCrtPem: certs.issuerCrt,
    now: NOW,
    ...over,
  };
}

const byDesc = (r: ReturnType<typeof checkProxies>, d: string) => r.find((x) => x.description === d);

describe('check --proxy', () => {
  it('ready proxies with a fresh certificate, the current anchors and version pass (native and classic sidecars)', () => {
    const r = checkProxies(input([pod('web-1'), pod('web-2', { native: false })]));
    expect(r.filter((x) => x.status !== 'ok')).toEqual([]);
    expect(r.map((x) => x.description)).toEqual([
      'data-plane proxies exist',
      'data-plane proxies are ready',
      'data-plane proxies hold a valid certificate',
      "data-plane proxies' certificates chain to their trust anchors",
      "data-plane proxies have the control plane's current trust anchors",
      "data-plane proxies run the control plane's version",
    ]);
    expect(byDesc(r, 'data-plane proxies hold a valid certificate')?.detail).toMatch(/in 24\.0 hours/);
  });

  it('no meshed pod: a failure that --wait retries', () => {
    const r = checkProxies(
      input([{ metadata: { name: 'plain', namespace: 'app' }, spec: { containers: [{ name: 'app' }] } }]),
    );
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({
      status: 'fail',
      retry: true,
      detail: 'no pod with a minimesh-proxy container in namespace app',
    });
  });

  it('a proxy that is not ready fails (retryable), naming the pod and why', () => {
    const p = pod('web-1', { ready: false });
    p.status!.initContainerStatuses![0]!.state = { waiting: { reason: 'CrashLoopBackOff' } };
    p.status!.initContainerStatuses![0]!.restartCount = 4;
    const r = byDesc(checkProxies(input([p, pod('web-2')])), 'data-plane proxies are ready');
    expect(r).toMatchObject({ status: 'fail', retry: true, detail: 'app/web-1: CrashLoopBackOff (4 restarts)' });
  });

  it('an expired certificate, a missing one and unreadable metrics fail', () => {
    const pods = [pod('old'), pod('none'), pod('far')];
    const r = checkProxies(
      input(pods, {
        metrics: new Map<string, { text?: string; error?: string }>([
          ['app/old', metrics(new Date(NOW.getTime() - 60_000))],
          ['app/none', { text: 'request_total 1\n' }],
          ['app/far', { error: 'GET /api/v1/namespaces/app/pods/far:4191/proxy/metrics: no answer within 5 s' }],
        ]),
      }),
    );
    const c = byDesc(r, 'data-plane proxies hold a valid certificate');
    expect(c?.status).toBe('fail');
    expect(c?.detail?.split('; ')).toEqual([
      'app/old: its certificate expired at 2026-11-27T09:59:00.000Z',
      `app/none: the proxy has no certificate yet (no ${CERT_EXPIRY_METRIC})`,
      "app/far: cannot read the proxy's metrics: GET /api/v1/namespaces/app/pods/far:4191/proxy/metrics: no answer within 5 s",
    ]);
  });

  it('fails when the issuer does not chain to the anchors a pod was started with; warns when they are an older bundle', () => {
    const r = checkProxies(
      input([pod('stranger', { anchors: other.caCrt }), pod('bundle', { anchors: `${other.caCrt}${certs.caCrt}` })]),
    );
    const chain = byDesc(r, "data-plane proxies' certificates chain to their trust anchors");
    expect(chain?.status).toBe('fail');
    expect(chain?.detail).toBe(
      'app/stranger: issuer identity.minimesh.cluster.local is signed by none of root.minimesh.cluster.local',
    );
    const current = byDesc(r, "data-plane proxies have the control plane's current trust anchors");
    expect(current).toMatchObject({
      status: 'warn',
      detail: 'app/stranger; app/bundle: started with another trust-anchor bundle',
    });
  });

  it('warns when a proxy runs another version than the control plane', () => {
    const r = checkProxies(input([pod('web-1', { version: '0.0.9' }), pod('web-2')]));
    expect(byDesc(r, "data-plane proxies run the control plane's version")).toMatchObject({
      status: 'warn',
      detail: 'control plane 0.1.0; app/web-1: 0.0.9',
    });
  });

  it('reads a metric with or without labels', () => {
    expect(metricValue(`${CERT_EXPIRY_METRIC}{a="b"} 12.5\n`, CERT_EXPIRY_METRIC)).toBe(12.5);
    expect(metricValue(`other 1\n`, CERT_EXPIRY_METRIC)).toBeUndefined();
  });
});
