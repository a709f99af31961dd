// The policy.minimesh.io CRDs on the real API server (the local cluster): they are accepted, serve
// every version, default what Linkerd's default, and reject malformed objects with a message naming
// the field. Every object the API server accepts, the index can use; the malformed ones it rejects are
// also kept out by the index (second line of defence, for clusters with older CRDs).
import { adminClient, ensureCluster, KubeApiError, type KubeClient, type KubeObject } from '@minimesh/local-cluster';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policyCrds } from '../src/crds.js';
import { POLICY_GROUP, RESOURCE_KINDS } from '../src/resources/kinds.js';
import { ResourceStore, type IndexedKind } from '../src/index/store.js';
import { TEST_CLUSTER } from '../src/testing.js';

let api: KubeClient;
/** CRDs this test created (and deletes); CRDs a chart release already owns are used as they are. */
const created: string[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  await ensureCluster();
  api = adminClient();
  for (const crd of policyCrds()) {
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
    const existing = await api.get<KubeObject>(path);
    if (existing?.metadata?.annotations?.['meta.helm.sh/release-name']) continue;
    await api.request('PATCH', `${path}?fieldManager=policy-crd-test&force=true`, crd, 'application/apply-patch+yaml');
    if (!existing) created.push(path);
  }
  for (const crd of policyCrds()) {
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const c = await api.get<KubeObject>(path);
      const established = (c?.status?.conditions ?? []).some(
        (x: { type: string; status: string }) => x.type === 'Established' && x.status === 'True',
      );
      if (established) break;
      if (Date.now() > deadline) throw new Error(`${crd.metadata.name} not Established: ${JSON.stringify(c?.status)}`);
      await sleep(200);
    }
  }
}, 600_000);

afterAll(async () => {
  for (const path of created) await api?.request('DELETE', path).catch(() => undefined);
});

/** The plural of a policy.minimesh.io kind, from the one table of the kinds the controller reads. */
function pluralOf(kind: string): string {
  const k = Object.values(RESOURCE_KINDS).find((x) => x.group === POLICY_GROUP && x.kind === kind);
  if (!k) throw new Error(`${kind} is not a policy.minimesh.io kind of RESOURCE_KINDS`);
  return k.plural;
}

/** Creates the object with dryRun=All: the API server validates and defaults it but stores nothing. */
async function dryRunCreate(obj: KubeObject): Promise<KubeObject> {
  const [group, version] = String(obj.apiVersion).split('/');
  const path = `/apis/${group}/${version}/namespaces/default/${pluralOf(String(obj.kind))}?dryRun=All`;
  return api.request<KubeObject>('POST', path, { ...obj, metadata: { namespace: 'default', ...obj.metadata } });
}

const G = 'policy.minimesh.io';
const server = (version: string, spec: KubeObject, name = 'web'): KubeObject => ({
  apiVersion: `${G}/${version}`,
  kind: 'Server',
  metadata: { name },
  spec,
});
const authz = (spec: KubeObject): KubeObject => ({
  apiVersion: `${G}/v1alpha1`,
  kind: 'AuthorizationPolicy',
  metadata: { name: 'p' },
  spec,
});
const route = (version: string, spec: KubeObject): KubeObject => ({
  apiVersion: `${G}/${version}`,
  kind: 'HTTPRoute',
  metadata: { name: 'r' },
  spec,
});
const rateLimit = (spec: KubeObject): KubeObject => ({
  apiVersion: `${G}/v1alpha1`,
  kind: 'HTTPLocalRateLimitPolicy',
  metadata: { name: 'rl' },
  spec: { targetRef: { group: G, kind: 'Server', name: 'web' }, ...spec },
});

const egress = (spec: KubeObject): KubeObject => ({
  apiVersion: `${G}/v1alpha1`,
  kind: 'EgressNetwork',
  metadata: { name: 'out' },
  spec,
});

const VALID: Array<[string, KubeObject]> = [
  ['EgressNetwork without networks (everything outside the cluster), Allow', egress({ trafficPolicy: 'Allow' })],
  [
    'EgressNetwork with networks, exceptions and a bare address, Deny',
    egress({
      trafficPolicy: 'Deny',
      networks: [{ cidr: '203.0.113.0/24', except: ['203.0.113.128/25', '203.0.113.7'] }, { cidr: '2001:db8::/32' }],
    }),
  ],
  [
    'HTTPRoute whose parent is an EgressNetwork',
    route('v1beta3', {
      parentRefs: [{ kind: 'EgressNetwork', name: 'out', port: 80 }],
      rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/allowed' } }] }],
    }),
  ],
  [
    'HTTPLocalRateLimitPolicy with total, identity and an override',
    rateLimit({
      total: { requestsPerSecond: 100 },
      identity: { requestsPerSecond: 20 },
      overrides: [{ requestsPerSecond: 50, clientRefs: [{ kind: 'ServiceAccount', name: 'batch' }] }],
    }),
  ],
  ['Server v1beta3 by port name', server('v1beta3', { podSelector: { matchLabels: { app: 'web' } }, port: 'http' })],
  [
    'Server v1beta3 with every field',
    server('v1beta3', {
      podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] },
      port: 8080,
      proxyProtocol: 'HTTP/2',
      accessPolicy: 'cluster-authenticated',
    }),
  ],
  ['Server v1beta2 selecting ExternalWorkloads', server('v1beta2', { externalWorkloadSelector: {}, port: 80 })],
  [
    'Server v1beta1 (deprecated, still served)',
    server('v1beta1', { podSelector: {}, port: 80, proxyProtocol: 'opaque' }),
  ],
  [
    'AuthorizationPolicy on a Server, by ServiceAccount',
    authz({
      targetRef: { group: G, kind: 'Server', name: 'web' },
      requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
    }),
  ],
  [
    'AuthorizationPolicy on a Namespace, by MeshTLS and Network authentications',
    authz({
      targetRef: { kind: 'Namespace', name: 'default' },
      requiredAuthenticationRefs: [
        { group: G, kind: 'MeshTLSAuthentication', name: 'm' },
        { group: G, kind: 'NetworkAuthentication', name: 'n', namespace: 'other' },
      ],
    }),
  ],
  [
    'MeshTLSAuthentication by identities',
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'MeshTLSAuthentication',
      metadata: { name: 'm' },
      spec: { identities: ['*.default.serviceaccount.identity.minimesh.cluster.local'] },
    },
  ],
  [
    'MeshTLSAuthentication by refs',
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'MeshTLSAuthentication',
      metadata: { name: 'm' },
      spec: {
        identityRefs: [
          { kind: 'ServiceAccount', name: 'client' },
          { kind: 'Namespace', name: 'ops' },
        ],
      },
    },
  ],
  [
    'NetworkAuthentication with an exception and a bare IPv6 address',
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'NetworkAuthentication',
      metadata: { name: 'n' },
      spec: { networks: [{ cidr: '10.0.0.0/8', except: ['10.0.9.0/24'] }, { cidr: 'fd00::1' }] },
    },
  ],
  [
    'HTTPRoute v1beta3 on a Service with timeouts, matches, filters and backends',
    route('v1beta3', {
      parentRefs: [{ group: 'core', kind: 'Service', name: 'web', port: 80 }],
      hostnames: ['web.example.com', '*.example.com'],
      rules: [
        {
          matches: [
            {
              path: { type: 'PathPrefix', value: '/api' },
              headers: [{ name: 'x-tenant', value: 'blue' }],
              method: 'GET',
            },
          ],
          filters: [
            { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-via', value: 'mesh' }] } },
          ],
          backendRefs: [
            { name: 'web', port: 80, weight: 90 },
            { name: 'web-canary', port: 80, weight: 10 },
          ],
          timeouts: { request: '1s500ms' },
        },
      ],
    }),
  ],
  ['HTTPRoute v1beta1 on a Server', route('v1beta1', { parentRefs: [{ group: G, kind: 'Server', name: 'web' }] })],
];

const INVALID: Array<[string, KubeObject, string]> = [
  ['Server without a selector', server('v1beta3', { port: 80 }), 'spec'],
  [
    'Server with both selectors',
    server('v1beta3', { podSelector: {}, externalWorkloadSelector: {}, port: 80 }),
    'spec',
  ],
  ['Server port 0', server('v1beta3', { podSelector: {}, port: 0 }), 'spec.port'],
  ['Server port 70000', server('v1beta3', { podSelector: {}, port: 70000 }), 'spec.port'],
  ['Server port name with capitals', server('v1beta3', { podSelector: {}, port: 'HTTP' }), 'spec.port'],
  [
    'Server with an unknown protocol',
    server('v1beta3', { podSelector: {}, port: 80, proxyProtocol: 'SMTP' }),
    'spec.proxyProtocol',
  ],
  [
    'Server with an unknown access policy',
    server('v1beta3', { podSelector: {}, port: 80, accessPolicy: 'allow' }),
    'spec.accessPolicy',
  ],
  [
    'Server selector In without values',
    server('v1beta3', { podSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] }, port: 80 }),
    'spec.podSelector.matchExpressions[0]',
  ],
  [
    'AuthorizationPolicy targeting a Deployment',
    authz({ targetRef: { group: 'apps', kind: 'Deployment', name: 'web' }, requiredAuthenticationRefs: [] }),
    'spec.targetRef',
  ],
  [
    'AuthorizationPolicy targeting a Server without its group',
    authz({ targetRef: { kind: 'Server', name: 'web' }, requiredAuthenticationRefs: [] }),
    'spec.targetRef',
  ],
  [
    'AuthorizationPolicy without requiredAuthenticationRefs',
    authz({ targetRef: { group: G, kind: 'Server', name: 'web' } }),
    'spec.requiredAuthenticationRefs',
  ],
  [
    'AuthorizationPolicy requiring a Secret',
    authz({
      targetRef: { group: G, kind: 'Server', name: 'web' },
      requiredAuthenticationRefs: [{ kind: 'Secret', name: 's' }],
    }),
    'spec.requiredAuthenticationRefs[0]',
  ],
  [
    'AuthorizationPolicy with two NetworkAuthentications',
    authz({
      targetRef: { group: G, kind: 'Server', name: 'web' },
      requiredAuthenticationRefs: [
        { group: G, kind: 'NetworkAuthentication', name: 'a' },
        { group: G, kind: 'NetworkAuthentication', name: 'b' },
      ],
    }),
    'at most one NetworkAuthentication',
  ],
  [
    'AuthorizationPolicy with a ServiceAccount and a MeshTLSAuthentication',
    authz({
      targetRef: { group: G, kind: 'Server', name: 'web' },
      requiredAuthenticationRefs: [
        { kind: 'ServiceAccount', name: 'a' },
        { group: G, kind: 'MeshTLSAuthentication', name: 'b' },
      ],
    }),
    'at most one MeshTLSAuthentication or ServiceAccount',
  ],
  [
    'MeshTLSAuthentication with both identities and identityRefs',
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'MeshTLSAuthentication',
      metadata: { name: 'm' },
      spec: { identities: ['*'], identityRefs: [{ kind: 'ServiceAccount', name: 'x' }] },
    },
    'spec',
  ],
  [
    'MeshTLSAuthentication with no identity',
    { apiVersion: `${G}/v1alpha1`, kind: 'MeshTLSAuthentication', metadata: { name: 'm' }, spec: { identities: [] } },
    'spec.identities',
  ],
  [
    'MeshTLSAuthentication referring to a Pod',
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'MeshTLSAuthentication',
      metadata: { name: 'm' },
      spec: { identityRefs: [{ kind: 'Pod', name: 'x' }] },
    },
    'spec.identityRefs[0]',
  ],
  [
    'NetworkAuthentication with a bad CIDR',
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'NetworkAuthentication',
      metadata: { name: 'n' },
      spec: { networks: [{ cidr: '10.0.0.0/33' }] },
    },
    'spec.networks[0].cidr',
  ],
  [
    'NetworkAuthentication without networks',
    { apiVersion: `${G}/v1alpha1`, kind: 'NetworkAuthentication', metadata: { name: 'n' }, spec: { networks: [] } },
    'spec.networks',
  ],
  [
    'HTTPRoute with a relative Exact path',
    route('v1beta3', { rules: [{ matches: [{ path: { type: 'Exact', value: 'api' } }] }] }),
    'spec.rules[0].matches[0].path',
  ],
  [
    'HTTPRoute with an unknown method',
    route('v1beta3', { rules: [{ matches: [{ method: 'FETCH' }] }] }),
    'spec.rules[0].matches[0].method',
  ],
  [
    'HTTPRoute with a malformed timeout',
    route('v1beta3', { rules: [{ timeouts: { request: 'ten seconds' } }] }),
    'spec.rules[0].timeouts.request',
  ],
  [
    'HTTPRoute with a filter missing its body',
    route('v1beta3', { rules: [{ filters: [{ type: 'RequestRedirect' }] }] }),
    'spec.rules[0].filters[0]',
  ],
  [
    'HTTPRoute with a negative backend weight',
    route('v1beta3', { rules: [{ backendRefs: [{ name: 'web', port: 80, weight: -1 }] }] }),
    'spec.rules[0].backendRefs[0].weight',
  ],
  ['HTTPRoute with an upper-case hostname', route('v1beta3', { hostnames: ['Web.Example.com'] }), 'spec.hostnames[0]'],
  ['EgressNetwork without a trafficPolicy', egress({ networks: [{ cidr: '203.0.113.0/24' }] }), 'spec.trafficPolicy'],
  ['EgressNetwork with trafficPolicy Audit', egress({ trafficPolicy: 'Audit' }), 'spec.trafficPolicy'],
  [
    'EgressNetwork with an invalid CIDR',
    egress({ trafficPolicy: 'Deny', networks: [{ cidr: '300.1.2.0/24' }] }),
    'spec.networks[0].cidr',
  ],
  [
    'EgressNetwork with an invalid exception',
    egress({ trafficPolicy: 'Deny', networks: [{ cidr: '203.0.113.0/24', except: ['not-an-address'] }] }),
    'spec.networks[0].except[0]',
  ],
  [
    'HTTPLocalRateLimitPolicy with a limit of 0',
    rateLimit({ total: { requestsPerSecond: 0 } }),
    'spec.total.requestsPerSecond',
  ],
  [
    'HTTPLocalRateLimitPolicy on an HTTPRoute',
    rateLimit({ targetRef: { group: G, kind: 'HTTPRoute', name: 'r' }, total: { requestsPerSecond: 5 } }),
    'spec.targetRef',
  ],
  [
    'HTTPLocalRateLimitPolicy overriding a Namespace',
    rateLimit({ overrides: [{ requestsPerSecond: 5, clientRefs: [{ kind: 'Namespace', name: 'ops' }] }] }),
    'spec.overrides[0].clientRefs[0]',
  ],
];

/** The index's parser over the same object, with the name and namespace the API server would give it. */
function indexProblem(obj: KubeObject): string | undefined {
  const store = new ResourceStore(TEST_CLUSTER);
  return store.apply(obj.kind as IndexedKind, { ...obj, metadata: { namespace: 'default', ...obj.metadata } })?.message;
}

describe('policy.minimesh.io CRDs on the API server', () => {
  it.each(VALID)('accepts: %s (and the index can use it)', async (_name, obj) => {
    const back = await dryRunCreate(obj);
    expect(back.kind).toBe(obj.kind);
    expect(indexProblem(back)).toBeUndefined();
  });

  it.each(INVALID)('rejects: %s', async (_name, obj, field) => {
    const err = await dryRunCreate(obj).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err, 'the API server accepted it').toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).status).toBe(422);
    expect((err as KubeApiError).body).toContain(field);
  });

  it('the index also keeps out what the schema rejects', () => {
    // Hostnames aside: the index matches them as given.
    const indexChecked = INVALID.filter(([name]) => !/upper-case hostname/.test(name));
    for (const [name, obj] of indexChecked) expect(indexProblem(obj), name).toBeDefined();
  });

  it('defaults what Linkerd defaults', async () => {
    const s = await dryRunCreate(server('v1beta3', { podSelector: {}, port: 80 }));
    expect(s.spec).toMatchObject({ proxyProtocol: 'unknown', accessPolicy: 'deny' });
    const r = await dryRunCreate(
      route('v1beta3', { parentRefs: [{ name: 'web' }], rules: [{ backendRefs: [{ name: 'b', port: 80 }] }] }),
    );
    expect(r.spec.parentRefs[0]).toEqual({ group: G, kind: 'Gateway', name: 'web' });
    expect(r.spec.rules[0].matches).toEqual([{ path: { type: 'PathPrefix', value: '/' } }]);
    expect(r.spec.rules[0].backendRefs[0]).toEqual({ group: '', kind: 'Service', name: 'b', port: 80, weight: 1 });
  });

  it('serves the deprecated Server versions with a warning', async () => {
    const list = await api.request<KubeObject>('GET', `/apis/${G}/v1beta1/namespaces/default/servers`);
    expect(list.kind).toBe('ServerList');
  });
});
