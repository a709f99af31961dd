// Authorization policy on a cluster (MINIMESH_E2E_DRIVER=local, the default, or k3d): a namespace whose
// default inbound policy is deny; a Server on the server's HTTP port and an AuthorizationPolicy that
// admits only the client's service account. The client gets 200; a meshed client with another identity
// and an unmeshed client get 403, counted in inbound_http_authz_deny_total; kubelet probes still pass.
// An HTTPRoute with a 1 s request timeout cuts a 3 s request (504); one with retry.minimesh.io
// annotations has the client's proxy retry a 503 twice (the limit) and count it. The audit log shows the policy
// controller's watches. Malformed policy objects are refused by the API server.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import type { K8sObject } from '../src/chart.js';
import {
  echoServer,
  httpClient,
  meshedNamespace,
  readyPod,
  setUpSpecMesh,
  tearDownSpecMesh,
  type SpecMesh,
} from '../src/apps.js';
import {
  applyObjects,
  eventually,
  identityOf,
  metricLines,
  metricSum,
  parseClientLines,
  proxyMetrics,
  specMeshSetup,
  SERVER_HTTP_PORT,
  type MeshSetup,
  type Pod,
} from '../src/mesh.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
const m: MeshSetup = specMeshSetup(driver, { cpNs: `minimesh-e2e-${suffix}`, appNs: `mm-e2e-policy-${suffix}` });
const ns = m.appNs;
const G = 'policy.minimesh.io';
const host = `server.${ns}.svc.cluster.local`;
let spec: SpecMesh | undefined;
let server: Pod;

function appObjects(): K8sObject[] {
  const url = (path: string) => `http://${host}:${SERVER_HTTP_PORT}${path}`;
  return [
    meshedNamespace(m, { annotations: { 'config.minimesh.io/default-inbound-policy': 'deny' } }),
    // Under deny, only the probe route admits the kubelet (the echo server's readiness probe).
    ...echoServer(m),
    {
      apiVersion: `${G}/v1beta3`,
      kind: 'Server',
      metadata: { name: 'server-http', namespace: ns },
      spec: { podSelector: { matchLabels: { app: 'server' } }, port: 'http', proxyProtocol: 'HTTP/1' },
    },
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'AuthorizationPolicy',
      metadata: { name: 'client-only', namespace: ns },
      spec: {
        targetRef: { group: G, kind: 'Server', name: 'server-http' },
        requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
      },
    },
    // Bad input: a policy for a Server that does not exist opens nothing.
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'AuthorizationPolicy',
      metadata: { name: 'to-nowhere', namespace: ns },
      spec: { targetRef: { group: G, kind: 'Server', name: 'no-such-server' }, requiredAuthenticationRefs: [] },
    },
    {
      apiVersion: `${G}/v1beta3`,
      kind: 'HTTPRoute',
      metadata: { name: 'delays', namespace: ns },
      spec: {
        parentRefs: [{ group: 'core', kind: 'Service', name: 'server', port: SERVER_HTTP_PORT }],
        rules: [
          { matches: [{ path: { type: 'PathPrefix', value: '/delay' } }], timeouts: { request: '1s' } },
          { matches: [{ path: { type: 'PathPrefix', value: '/' } }] },
        ],
      },
    },
    // Retries: 503s are retried twice, then the last goes back (the fixture answers /status/503 always).
    {
      apiVersion: `${G}/v1beta3`,
      kind: 'HTTPRoute',
      metadata: {
        name: 'retries',
        namespace: ns,
        annotations: { 'retry.minimesh.io/http': '503', 'retry.minimesh.io/limit': '2' },
      },
      spec: {
        parentRefs: [{ group: 'core', kind: 'Service', name: 'server', port: SERVER_HTTP_PORT }],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/status' } }] }],
      },
    },
    ...httpClient(m, 'client', url('/')),
    ...httpClient(m, 'other', url('/')),
    ...httpClient(m, 'unmeshed', url('/'), { meshed: false }),
    // The client's identity (admitted), so what cuts its requests is the route's timeout.
    ...httpClient(m, 'slow', url('/delay/3000'), { serviceAccount: 'client' }),
    ...httpClient(m, 'retrying', url('/status/503'), { serviceAccount: 'client' }),
  ];
}

beforeAll(async () => {
  spec = await setUpSpecMesh(m, { tmpPrefix: 'mm-e2e-policy-' });
  await applyObjects(driver, appObjects());
  server = await readyPod(m, 'server');
  for (const c of ['client', 'other', 'unmeshed', 'slow', 'retrying']) await readyPod(m, c);
}, 900_000);

afterAll(() => tearDownSpecMesh(m, spec));

async function clientLines(app: string) {
  const pods = await driver.kubectl([
    'get',
    'pods',
    '-n',
    ns,
    '-l',
    `app=${app}`,
    '-o',
    'jsonpath={.items[0].metadata.name}',
  ]);
  return parseClientLines(await driver.logs(ns, pods.stdout.trim(), 'http'));
}

describe(`authorization policy on the ${driver.name} cluster`, () => {
  it('passes the kubelet probes of a pod under deny (the probe route)', () => {
    expect(server.status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it("admits the client's service account: 200 over mTLS", async () => {
    await eventually(
      'the client gets 200',
      90_000,
      async () => (await clientLines('client')).filter((l) => l.status === 200).length >= 3,
    );
  }, 120_000);

  it('refuses a meshed client with another identity and an unmeshed client: 403', async () => {
    for (const app of ['other', 'unmeshed'])
      await eventually(`${app} gets 403`, 90_000, async () => {
        const lines = await clientLines(app);
        return lines.filter((l) => l.status === 403).length >= 3;
      });
    // And never a 200 once the policy is in place.
    for (const app of ['other', 'unmeshed']) {
      const lines = await clientLines(app);
      const first403 = lines.findIndex((l) => l.status === 403);
      expect(lines.slice(first403).filter((l) => l.status === 200)).toEqual([]);
    }
  }, 200_000);

  it('counts allowed and denied requests with Linkerd metric names and labels', async () => {
    const text = await eventually('deny metrics', 60_000, async () => {
      const t = await proxyMetrics(driver, ns, server.metadata.name);
      return metricSum(t, 'inbound_http_authz_deny_total', { srv_name: 'server-http' }) >= 2 ? t : undefined;
    });
    const deny = metricLines(text, 'inbound_http_authz_deny_total', {
      srv_group: G,
      srv_kind: 'server',
      srv_name: 'server-http',
      srv_port: String(SERVER_HTTP_PORT),
      route_kind: 'default',
      route_name: 'default',
    });
    expect(deny.length).toBeGreaterThan(0);
    // The other client is counted with its identity, the unmeshed one without TLS.
    expect(
      metricLines(text, 'inbound_http_authz_deny_total', { client_id: identityOf('other', ns, m.cpNs) }).length,
    ).toBe(1);
    expect(metricLines(text, 'inbound_http_authz_deny_total', { tls: 'no_identity' }).length).toBeGreaterThan(0);
    const allow = metricLines(text, 'inbound_http_authz_allow_total', {
      srv_name: 'server-http',
      authz_group: G,
      authz_kind: 'authorizationpolicy',
      authz_name: 'client-only',
      client_id: identityOf('client', ns, m.cpNs),
    });
    expect(allow.length).toBe(1);
    expect(metricSum(text, 'inbound_http_authz_allow_total', { authz_name: 'probe' })).toBeGreaterThan(0);
  }, 90_000);

  it("cuts a slow request at the HTTPRoute's 1 s timeout (504)", async () => {
    // The client's proxy learns the route with its first request to the Service (which goes without
    // it): from then on every answer is the timeout's.
    const lines = await eventually('three slow requests cut in a row', 90_000, async () => {
      const l = (await clientLines('slow')).filter((x) => x.status !== undefined).slice(-3);
      return l.length === 3 && l.every((x) => x.status === 504) ? l : undefined;
    });
    for (const l of lines) {
      expect(l.status).toBe(504);
      expect(l.ms).toBeGreaterThanOrEqual(900);
      expect(l.ms).toBeLessThan(2500);
    }
  }, 120_000);

  it("retries a 503 on the HTTPRoute's retry annotations, up to the limit, and counts it", async () => {
    const pod = await readyPod(m, 'retrying');
    const route = { route_kind: 'HTTPRoute', route_name: 'retries' };
    // Every request the client makes is sent three times (two retries) and ends at the limit.
    const text = await eventually('retries counted by the client proxy', 90_000, async () => {
      const t = await proxyMetrics(driver, ns, pod.metadata.name);
      return metricSum(t, 'outbound_http_route_retry_limit_exceeded_total', route) >= 3 ? t : undefined;
    });
    const limited = metricSum(text, 'outbound_http_route_retry_limit_exceeded_total', route);
    const retries = metricSum(text, 'outbound_http_route_retry_requests_total', route);
    // (A request may be between its retries when the metrics are read.)
    expect(retries).toBeGreaterThanOrEqual(2 * limited);
    expect(retries).toBeLessThanOrEqual(2 * limited + 2);
    expect(metricSum(text, 'outbound_http_route_retry_successes_total', route)).toBe(0);
    expect(
      metricLines(text, 'outbound_http_route_retry_requests_total', {
        ...route,
        parent_kind: 'Service',
        parent_name: 'server',
        parent_namespace: ns,
        parent_port: String(SERVER_HTTP_PORT),
      }).length,
    ).toBe(1);
    const lines = (await clientLines('retrying')).filter((l) => l.status !== undefined);
    expect(lines.slice(-3).map((l) => l.status)).toEqual([503, 503, 503]);
  }, 120_000);

  it('refuses malformed policy objects at the API server', async () => {
    const server = (spec: Record<string, unknown>): string =>
      JSON.stringify({ apiVersion: `${G}/v1beta3`, kind: 'Server', metadata: { name: 'broken', namespace: ns }, spec });
    // (The API server checks the CEL rules, e.g. the port's range, only once the plain schema holds.)
    const badPort = await driver.kubectl(['apply', '-f', '-'], server({ podSelector: {}, port: 70000 }));
    expect(badPort.code).not.toBe(0);
    expect(badPort.stderr).toMatch(/spec\.port/);
    const badProtocol = await driver.kubectl(
      ['apply', '-f', '-'],
      server({ podSelector: {}, port: 80, proxyProtocol: 'SMTP' }),
    );
    expect(badProtocol.code).not.toBe(0);
    expect(badProtocol.stderr).toMatch(/spec\.proxyProtocol: Unsupported value: "SMTP"/);
    const noPolicy = await driver.kubectl(['get', 'servers.policy.minimesh.io', 'broken', '-n', ns]);
    expect(noPolicy.code).not.toBe(0);
  }, 30_000);

  it("shows the policy controller's watches in the audit log", async () => {
    const controller = `system:serviceaccount:${m.cpNs}:minimesh-destination`;
    const watched = await eventually('policy watches', 60_000, async () => {
      const set = new Set<string>();
      for (const e of await driver.auditEvents()) {
        const agent = (e as unknown as { userAgent?: string }).userAgent ?? '';
        if (e.user?.username !== controller || !agent.startsWith('minimesh-policy/')) continue;
        if (e.verb === 'watch' && e.objectRef?.resource)
          set.add(`${e.objectRef.apiGroup ?? ''}/${e.objectRef.resource}`);
      }
      return set.size >= 7 ? set : undefined;
    });
    expect([...watched].sort()).toEqual(
      expect.arrayContaining([
        '/pods',
        '/services',
        `${G}/authorizationpolicies`,
        `${G}/httproutes`,
        `${G}/meshtlsauthentications`,
        `${G}/networkauthentications`,
        `${G}/servers`,
      ]),
    );
  }, 90_000);
});
