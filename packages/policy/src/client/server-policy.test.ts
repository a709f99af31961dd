// Authorization as the proxy enforces it, over policies the index computes and the server encodes:
// model → inbound.Server → compiled policy → decisions for clients and requests.
import { inbound } from '@minimesh/proto';
import { describe, expect, it } from 'vitest';
import { PolicyIndex } from '../index/policy-index.js';
import { toProtoServer } from '../server/inbound-translator.js';
import { TEST_CLUSTER } from '../testing.js';
import { requestView } from './http-match.js';
import {
  authorizeConnection,
  authorizeRequest,
  compileDefaultPolicy,
  compileServerPolicy,
  parseClientIp,
  type ClientInfo,
  type CompiledServerPolicy,
} from './server-policy.js';

const CLIENT_ID = 'client.shop.serviceaccount.identity.minimesh.cluster.local';
const pod = (annotations: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web-1', namespace: 'shop', labels: { app: 'web' }, annotations },
  spec: {
    containers: [
      {
        name: 'app',
        ports: [{ name: 'http', containerPort: 8080 }],
        readinessProbe: { httpGet: { path: '/healthz', port: 8080 } },
      },
    ],
  },
});

/** The policy of shop/web-1:8080 after applying these objects, as the proxy would compile it. */
function policyFor(objects: unknown[], annotations: Record<string, string> = {}): CompiledServerPolicy {
  const index = new PolicyIndex(TEST_CLUSTER);
  index.apply('Pod', pod(annotations));
  for (const o of objects) index.apply((o as { kind: 'Server' }).kind, o);
  const server = index.inbound('pod', 'shop', 'web-1', 8080)!.server;
  // Through the wire, as a proxy receives it.
  const bytes = inbound.Server.encode(toProtoServer(server, TEST_CLUSTER.networks)).finish();
  return compileServerPolicy(inbound.Server.decode(bytes));
}

const get = (path: string, headers: Record<string, string> = {}, host = 'web.shop.svc.cluster.local:8080') =>
  requestView('GET', path, host, (n) => headers[n]);

const meshed = (ip = '10.0.0.5', identity = CLIENT_ID): ClientInfo => ({ ip, tls: true, identity });
const plain = (ip = '10.0.0.5'): ClientInfo => ({ ip, tls: false });

const SERVER = {
  apiVersion: 'policy.minimesh.io/v1beta3',
  kind: 'Server',
  metadata: { name: 'web-http', namespace: 'shop' },
  spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http' },
};
const CLIENT_ONLY = {
  apiVersion: 'policy.minimesh.io/v1alpha1',
  kind: 'AuthorizationPolicy',
  metadata: { name: 'client-only', namespace: 'shop' },
  spec: {
    targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' },
    requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
  },
};

function decide(p: CompiledServerPolicy, client: ClientInfo, path = '/'): string {
  const d = authorizeRequest(p, client, get(path));
  if (d.kind === 'allow') return `allow ${d.authz.meta.kind}/${d.authz.meta.name} via ${d.route.meta.name}`;
  if (d.kind === 'deny') return `deny via ${d.route.meta.name}`;
  return d.kind;
}

describe('inbound authorization', () => {
  it.each([
    ['the client service account over mTLS', meshed(), 'allow authorizationpolicy/client-only via default'],
    [
      'another identity',
      meshed('10.0.0.6', 'other.shop.serviceaccount.identity.minimesh.cluster.local'),
      'deny via default',
    ],
    ['an unmeshed client', plain(), 'deny via default'],
    ['localhost (the pod itself)', plain('127.0.0.1'), 'allow default/localhost via default'],
  ])('a Server with an AuthorizationPolicy for one service account: %s', (_n, client, want) => {
    expect(decide(policyFor([SERVER, CLIENT_ONLY]), client)).toBe(want);
  });

  it('kubelet probes pass under deny: GET on the probe path only', () => {
    const p = policyFor([SERVER]);
    expect(p.meta).toEqual({ group: 'policy.minimesh.io', kind: 'server', name: 'web-http' });
    expect(decide(p, plain('10.0.0.1'), '/healthz')).toBe('allow default/probe via probe');
    expect(decide(p, plain('10.0.0.1'), '/healthz/x')).toBe('deny via default');
    expect(
      authorizeRequest(
        p,
        plain(),
        requestView('POST', '/healthz', undefined, () => undefined),
      ).kind,
    ).toBe('deny');
  });

  it('default policies: deny, cluster-unauthenticated, all-authenticated', () => {
    const deny = policyFor([], { 'config.minimesh.io/default-inbound-policy': 'deny' });
    expect(deny.meta).toEqual({ group: '', kind: 'default', name: 'deny' });
    expect(decide(deny, meshed())).toBe('deny via default');
    expect(authorizeConnection(deny, meshed())).toBeUndefined();

    const cluster = policyFor([], { 'config.minimesh.io/default-inbound-policy': 'cluster-unauthenticated' });
    expect(decide(cluster, plain('10.3.2.1'))).toBe('allow default/cluster-unauthenticated via default');
    expect(decide(cluster, plain('192.0.2.1'))).toBe('deny via default');
    expect(authorizeConnection(cluster, plain('fd00::7'))?.meta.name).toBe('cluster-unauthenticated');
    // An IPv4 client as a dual-stack socket reports it is checked against the IPv4 networks.
    expect(decide(cluster, plain('::ffff:10.3.2.1'))).toBe('allow default/cluster-unauthenticated via default');
    expect(parseClientIp('::ffff:10.3.2.1')).toEqual({ family: 4, value: 0x0a030201n });
    expect(parseClientIp('web')).toBeUndefined();

    const authn = policyFor([], { 'config.minimesh.io/default-inbound-policy': 'all-authenticated' });
    expect(decide(authn, plain('192.0.2.1'))).toBe('deny via default');
    expect(decide(authn, meshed('192.0.2.1', 'anyone.x.serviceaccount.identity.minimesh.cluster.local'))).toBe(
      'allow default/all-authenticated via default',
    );
    expect(decide(authn, { ip: '10.0.0.1', tls: true })).toBe('deny via default');
  });

  it('route policies admit clients to their route only; networks and exceptions apply', () => {
    const objects = [
      { ...SERVER, spec: { ...SERVER.spec, accessPolicy: 'deny' } },
      {
        apiVersion: 'policy.minimesh.io/v1beta3',
        kind: 'HTTPRoute',
        metadata: { name: 'metrics', namespace: 'shop' },
        spec: {
          parentRefs: [{ group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' }],
          rules: [{ matches: [{ path: { type: 'Exact', value: '/metrics' }, method: 'GET' }] }],
        },
      },
      {
        apiVersion: 'policy.minimesh.io/v1beta3',
        kind: 'HTTPRoute',
        metadata: { name: 'api', namespace: 'shop' },
        spec: {
          parentRefs: [{ group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' }],
          rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/api' } }] }],
        },
      },
      {
        apiVersion: 'policy.minimesh.io/v1alpha1',
        kind: 'NetworkAuthentication',
        metadata: { name: 'scrapers', namespace: 'shop' },
        spec: { networks: [{ cidr: '10.9.0.0/16', except: ['10.9.9.0/24'] }] },
      },
      {
        apiVersion: 'policy.minimesh.io/v1alpha1',
        kind: 'AuthorizationPolicy',
        metadata: { name: 'scrape', namespace: 'shop' },
        spec: {
          targetRef: { group: 'policy.minimesh.io', kind: 'HTTPRoute', name: 'metrics' },
          requiredAuthenticationRefs: [
            { group: 'policy.minimesh.io', kind: 'NetworkAuthentication', name: 'scrapers' },
          ],
        },
      },
    ];
    const p = policyFor(objects);
    expect(decide(p, plain('10.9.1.1'), '/metrics')).toBe('allow authorizationpolicy/scrape via metrics');
    expect(decide(p, plain('10.9.9.9'), '/metrics')).toBe('deny via metrics');
    expect(decide(p, plain('10.9.1.1'), '/api/users')).toBe('deny via api');
    // Routes replace the default route: a path no route matches is not found (404), not denied.
    expect(decide(p, plain('10.9.1.1'), '/other')).toBe('no-route');
    expect(decide(p, plain('10.9.1.1'), '/apix')).toBe('no-route');
  });

  it('a policy that cannot be compiled admits nothing', () => {
    const p = compileServerPolicy({
      protocol: { kind: { $case: 'opaque', value: {} } },
      serverIps: [],
      authorizations: [
        {
          networks: [],
          labels: { name: 'broken' },
          authentication: { permit: { $case: 'unauthenticated', value: {} } },
        },
      ],
      labels: { group: 'policy.minimesh.io', kind: 'server', name: 's' },
    });
    expect(p.invalid).toBe('authorization broken: no networks');
    expect(authorizeConnection(p, plain('127.0.0.1'))).toBeUndefined();
    expect(authorizeRequest(p, plain(), get('/')).kind).toBe('invalid');
  });

  it("the proxy's configured default before the controller answers: deny closes, others detect", () => {
    const deny = compileDefaultPolicy('deny', {
      clusterNetworks: TEST_CLUSTER.networks,
      detectTimeoutMs: 10_000,
      opaque: false,
    });
    expect(deny.protocol).toBe('opaque');
    expect(authorizeConnection(deny, meshed())).toBeUndefined();
    expect(authorizeConnection(deny, plain('127.0.0.1'))?.meta.name).toBe('localhost');
    const cluster = compileDefaultPolicy('cluster-authenticated', {
      clusterNetworks: TEST_CLUSTER.networks,
      detectTimeoutMs: 5000,
      opaque: false,
    });
    expect(cluster.protocol).toBe('detect');
    expect(decide(cluster, meshed('10.1.1.1'))).toBe('allow default/cluster-authenticated via default');
    expect(decide(cluster, meshed('192.0.2.1'))).toBe('deny via default');
    const opaque = compileDefaultPolicy('all-unauthenticated', {
      clusterNetworks: [],
      detectTimeoutMs: 1,
      opaque: true,
    });
    expect(opaque.protocol).toBe('opaque');
    expect(authorizeConnection(opaque, plain('192.0.2.1'))?.meta.name).toBe('all-unauthenticated');
  });
});
