// The gRPC services end to end over loopback with a real grpc-js client: answers, streamed diffs,
// the end of a stream when its pod goes, and the status codes of bad requests.
import {
  credentials,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  status,
  type Client,
  type ClientReadableStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { fromIpAddress, fromTcpAddress, inbound, outbound, toTcpAddress } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PolicyIndex } from '../index/policy-index.js';
import { createPolicyMetrics } from '../metrics.js';
import { TEST_CLUSTER } from '../testing.js';
import {
  createInboundHandlers,
  createOutboundHandlers,
  INBOUND_SERVICE,
  OUTBOUND_SERVICE,
  parseServiceAuthority,
} from './policy-server.js';

const index = new PolicyIndex(TEST_CLUSTER);
const registry = new Registry();
const metrics = createPolicyMetrics(registry);
const logger = createLogger({ name: 'test', level: 'silent', format: 'json' });
let server: Server;
type Rpc = (...a: unknown[]) => unknown;
let inboundClient: Client & { getPort: Rpc; watchPort: Rpc };
let outboundClient: Client & { get: Rpc; watch: Rpc };
let inboundHandlers: ReturnType<typeof createInboundHandlers>;

const pod = (name: string, labels: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels },
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

beforeAll(async () => {
  index.apply('Pod', pod('web-1', { app: 'web' }));
  index.apply('Service', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { clusterIP: '10.96.0.10', ports: [{ port: 80 }, { port: 5432 }] },
  });
  server = new Server();
  inboundHandlers = createInboundHandlers({ index, logger, metrics });
  server.addService(INBOUND_SERVICE, inboundHandlers);
  server.addService(OUTBOUND_SERVICE, createOutboundHandlers({ index, logger, metrics }));
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const In = makeGenericClientConstructor(inbound.InboundServerPoliciesService, 'InboundServerPolicies');
  const Out = makeGenericClientConstructor(outbound.OutboundPoliciesService, 'OutboundPolicies');
  inboundClient = new In(`127.0.0.1:${port}`, credentials.createInsecure()) as never;
  outboundClient = new Out(`127.0.0.1:${port}`, credentials.createInsecure()) as never;
});

afterAll(() => {
  inboundClient?.close();
  outboundClient?.close();
  server?.forceShutdown();
});

function unary<Req, Res>(client: object, method: string, req: Req): Promise<Res> {
  const fn = (client as Record<string, Rpc>)[method] as Rpc;
  return new Promise((resolve, reject) =>
    fn.call(client, req, (err: ServiceError | null, res: Res) => (err ? reject(err) : resolve(res))),
  );
}

/** Collects stream messages; next() waits for the n-th. */
function collect<T>(stream: ClientReadableStream<T>) {
  const messages: T[] = [];
  const waiters: Array<() => void> = [];
  let ended: ServiceError | 'ok' | undefined;
  stream.on('data', (m: T) => {
    messages.push(m);
    waiters.splice(0).forEach((w) => w());
  });
  stream.on('error', (e: ServiceError) => {
    ended = e;
    waiters.splice(0).forEach((w) => w());
  });
  stream.on('end', () => {
    ended ??= 'ok';
    waiters.splice(0).forEach((w) => w());
  });
  const until = async (cond: () => boolean) => {
    const deadline = Date.now() + 5000;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out; have ${messages.length} messages, ended ${String(ended)}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
  };
  return {
    messages,
    ended: () => ended,
    next: (n: number) => until(() => messages.length >= n),
    end: () => until(() => ended !== undefined),
  };
}

const WORKLOAD = JSON.stringify({ ns: 'shop', pod: 'web-1' });

describe('InboundServerPolicies', () => {
  it('GetPort answers the default policy as Linkerd encodes it', async () => {
    const s = await unary<inbound.PortSpec, inbound.Server>(inboundClient, 'getPort', {
      workload: WORKLOAD,
      port: 8080,
    });
    expect(s.labels).toEqual({ group: '', kind: 'default', name: 'all-unauthenticated' });
    expect(s.protocol?.kind?.$case).toBe('detect');
    const detect = s.protocol?.kind?.$case === 'detect' ? s.protocol.kind.value : undefined;
    expect(Number(detect?.timeout?.seconds)).toBe(10);
    expect(detect?.httpRoutes.map((r) => r.metadata?.kind)).toEqual([
      { $case: 'default', value: 'default' },
      { $case: 'default', value: 'probe' },
    ]);
    const probe = detect?.httpRoutes[1];
    expect(probe?.rules[0]?.matches[0]?.path?.kind).toEqual({ $case: 'exact', value: '/healthz' });
    expect(probe?.rules[0]?.matches[0]?.method?.type).toEqual({ $case: 'registered', value: 0 });
    expect(probe?.authorizations[0]?.authentication?.permit?.$case).toBe('unauthenticated');
    const [authz] = s.authorizations;
    expect(authz?.labels).toEqual({ group: '', kind: 'default', name: 'all-unauthenticated' });
    expect(authz?.metadata?.kind).toEqual({ $case: 'default', value: 'all-unauthenticated' });
    expect(authz?.networks.map((n) => `${fromIpAddress(n.net?.ip)}/${n.net?.prefixLen}`)).toEqual([
      '0.0.0.0/0',
      '::/0',
    ]);
  });

  it('the older "<ns>:<pod>" workload form works too; bad requests get InvalidArgument and NotFound', async () => {
    const s = await unary<inbound.PortSpec, inbound.Server>(inboundClient, 'getPort', {
      workload: 'shop:web-1',
      port: 9,
    });
    expect(s.labels.name).toBe('all-unauthenticated');
    await expect(unary(inboundClient, 'getPort', { workload: 'web-1', port: 80 })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
    });
    await expect(unary(inboundClient, 'getPort', { workload: WORKLOAD, port: 70000 })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
    });
    await expect(
      unary(inboundClient, 'getPort', { workload: JSON.stringify({ ns: 'shop', pod: 'nope' }), port: 80 }),
    ).rejects.toMatchObject({ code: status.NOT_FOUND, details: 'pod shop/nope not found' });
  });

  it('WatchPort streams the policy, then each change, and ends when the pod is deleted', async () => {
    index.apply('Pod', pod('web-2', { app: 'web' }));
    const stream = inboundClient.watchPort({
      workload: JSON.stringify({ ns: 'shop', pod: 'web-2' }),
      port: 8080,
    }) as ClientReadableStream<inbound.Server>;
    const c = collect(stream);
    await c.next(1);
    expect(c.messages[0]?.labels.kind).toBe('default');
    index.apply('Server', {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'Server',
      metadata: { name: 'web-http', namespace: 'shop' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http', proxyProtocol: 'HTTP/1' },
    });
    await c.next(2);
    expect(c.messages[1]?.labels).toEqual({ group: 'policy.minimesh.io', kind: 'server', name: 'web-http' });
    expect(c.messages[1]?.authorizations).toEqual([]);
    expect(c.messages[1]?.protocol?.kind?.$case).toBe('http1');
    index.apply('AuthorizationPolicy', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'client-only', namespace: 'shop' },
      spec: {
        targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' },
        requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
      },
    });
    await c.next(3);
    const authz = c.messages[2]?.authorizations[0];
    expect(authz?.metadata?.kind).toEqual({
      $case: 'resource',
      value: {
        group: 'policy.minimesh.io',
        kind: 'authorizationpolicy',
        name: 'client-only',
        namespace: '',
        section: '',
        port: 0,
      },
    });
    expect(authz?.authentication?.permit).toEqual({
      $case: 'meshTLS',
      value: {
        clients: {
          $case: 'identities',
          value: { identities: [{ name: 'client.shop.serviceaccount.identity.minimesh.cluster.local' }], suffixes: [] },
        },
      },
    });
    index.delete('Pod', 'shop', 'web-2');
    await c.end();
    expect(c.ended()).toBe('ok');
    expect(c.messages).toHaveLength(3);
  });

  it('WatchPort for an unknown pod fails with NotFound', async () => {
    const c = collect(
      inboundClient.watchPort({
        workload: JSON.stringify({ ns: 'shop', pod: 'ghost' }),
        port: 80,
      }) as ClientReadableStream<inbound.Server>,
    );
    await c.end();
    expect((c.ended() as ServiceError).code).toBe(status.NOT_FOUND);
  });

  it('endAll ends open streams (shutdown)', async () => {
    const c = collect(
      inboundClient.watchPort({ workload: WORKLOAD, port: 8080 }) as ClientReadableStream<inbound.Server>,
    );
    await c.next(1);
    inboundHandlers.endAll();
    await c.end();
    expect(c.ended()).toBe('ok');
  });
});

describe('OutboundPolicies', () => {
  it('Get by authority answers the Service port with a balancer over Destination.Get', async () => {
    const p = await unary<outbound.TrafficSpec, outbound.OutboundPolicy>(outboundClient, 'get', {
      sourceWorkload: WORKLOAD,
      target: { $case: 'authority', value: 'web.shop.svc.cluster.local:80' },
    });
    expect(p.metadata?.kind).toEqual({
      $case: 'resource',
      value: { group: 'core', kind: 'Service', name: 'web', namespace: 'shop', section: '', port: 80 },
    });
    const detect = p.protocol?.kind?.$case === 'detect' ? p.protocol.kind.value : undefined;
    const rule = detect?.http1?.routes[0]?.rules[0];
    const backend =
      rule?.backends?.kind?.$case === 'firstAvailable' ? rule.backends.kind.value.backends[0]?.backend : undefined;
    expect(backend?.kind?.$case === 'balancer' && backend.kind.value.discovery?.kind).toEqual({
      $case: 'dst',
      value: { path: 'web.shop.svc.cluster.local:80' },
    });
    expect(detect?.opaque?.routes[0]?.metadata?.kind).toEqual({ $case: 'default', value: 'opaq' });
    expect(detect?.http2?.routes[0]?.metadata?.kind).toEqual({ $case: 'default', value: 'http' });
  });

  it('by IP: a ClusterIP port, an undefined port, an address outside the cluster, an unknown in-cluster IP', async () => {
    const get = (ip: string, port: number) =>
      unary<outbound.TrafficSpec, outbound.OutboundPolicy>(outboundClient, 'get', {
        sourceWorkload: WORKLOAD,
        target: { $case: 'addr', value: toTcpAddress(ip, port) },
      });
    const opaque = await get('10.96.0.10', 5432);
    expect(opaque.protocol?.kind?.$case).toBe('opaque');
    const undef = await get('10.96.0.10', 81);
    const route = undef.protocol?.kind?.$case === 'opaque' ? undef.protocol.kind.value.routes[0] : undefined;
    expect(route?.metadata?.kind).toEqual({ $case: 'default', value: 'undefined-port' });
    expect(route?.rules[0]?.filters[0]?.kind?.$case).toBe('forbidden');
    const out = await get('192.0.2.7', 443);
    expect(out.metadata?.kind).toEqual({ $case: 'default', value: 'egress-fallback' });
    const detect = out.protocol?.kind?.$case === 'detect' ? out.protocol.kind.value : undefined;
    const backends = detect?.opaque?.routes[0]?.rules[0]?.backends?.kind;
    const fwd = backends?.$case === 'firstAvailable' ? backends.value.backends[0]?.backend?.kind : undefined;
    expect(fwd?.$case === 'forward' && fromTcpAddress(fwd.value.addr)).toEqual({ ip: '192.0.2.7', port: 443 });
    await expect(get('10.1.2.3', 80)).rejects.toMatchObject({ code: status.NOT_FOUND });
  });

  it('Watch streams route changes; unknown Services and malformed authorities are NotFound', async () => {
    const c = collect(
      outboundClient.watch({
        sourceWorkload: WORKLOAD,
        target: { $case: 'authority', value: 'web.shop.svc.cluster.local:80' },
      }) as ClientReadableStream<outbound.OutboundPolicy>,
    );
    await c.next(1);
    index.apply('HTTPRoute', {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'HTTPRoute',
      metadata: { name: 'slow', namespace: 'shop' },
      spec: {
        parentRefs: [{ group: 'core', kind: 'Service', name: 'web', port: 80 }],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/slow' } }], timeouts: { request: '250ms' } }],
      },
    });
    await c.next(2);
    const detect = c.messages[1]?.protocol?.kind?.$case === 'detect' ? c.messages[1].protocol.kind.value : undefined;
    const rule = detect?.http1?.routes[0]?.rules[0];
    expect(rule?.timeouts?.request).toEqual({ seconds: 0n, nanos: 250_000_000 });
    expect(rule?.requestTimeout).toEqual({ seconds: 0n, nanos: 250_000_000 });
    await expect(
      unary(outboundClient, 'get', {
        sourceWorkload: WORKLOAD,
        target: { $case: 'authority', value: 'nope.shop.svc.cluster.local:80' },
      }),
    ).rejects.toMatchObject({ code: status.NOT_FOUND });
    await expect(
      unary(outboundClient, 'get', {
        sourceWorkload: WORKLOAD,
        target: { $case: 'authority', value: 'example.com:443' },
      }),
    ).rejects.toMatchObject({ code: status.NOT_FOUND });
    await expect(
      unary(outboundClient, 'get', {
        sourceWorkload: 'x',
        target: { $case: 'authority', value: 'web.shop.svc.cluster.local' },
      }),
    ).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    c.messages.length = 0;
  });

  it('Watch on an address outside the cluster follows EgressNetworks: fallback, then Deny with a route, then gone', async () => {
    const c = collect(
      outboundClient.watch({
        sourceWorkload: WORKLOAD,
        target: { $case: 'addr', value: toTcpAddress('203.0.113.9', 80) },
      }) as ClientReadableStream<outbound.OutboundPolicy>,
    );
    await c.next(1);
    expect(c.messages[0]?.metadata?.kind).toEqual({ $case: 'default', value: 'egress-fallback' });
    // A global EgressNetwork (the control plane's namespace) denies; a route in the client's namespace allows /ok.
    index.apply('EgressNetwork', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'EgressNetwork',
      metadata: { name: 'partner', namespace: 'minimesh' },
      spec: { trafficPolicy: 'Deny', networks: [{ cidr: '203.0.113.0/24' }] },
    });
    await c.next(2);
    expect(c.messages[1]?.metadata?.kind).toEqual({
      $case: 'resource',
      value: {
        group: 'policy.minimesh.io',
        kind: 'EgressNetwork',
        namespace: 'minimesh',
        name: 'partner',
        section: '',
        port: 80,
      },
    });
    index.apply('GatewayHTTPRoute', {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'partner-ok', namespace: 'shop' },
      spec: {
        parentRefs: [
          { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'partner', namespace: 'minimesh', port: 80 },
        ],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/ok' } }] }],
      },
    });
    await c.next(3);
    const routes = (m: outbound.OutboundPolicy | undefined) =>
      m?.protocol?.kind?.$case === 'detect'
        ? m.protocol.kind.value.http1?.routes.map((r) =>
            r.metadata?.kind?.$case === 'default' ? r.metadata.kind.value : r.metadata?.kind?.value.name,
          )
        : undefined;
    expect(routes(c.messages[2])).toEqual(['partner-ok', 'http-egress-deny']);
    // An address inside the cluster networks is never egress, whatever EgressNetwork covers it.
    index.apply('EgressNetwork', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'EgressNetwork',
      metadata: { name: 'everything', namespace: 'minimesh' },
      spec: { trafficPolicy: 'Deny', networks: [{ cidr: '0.0.0.0/0' }] },
    });
    await expect(
      unary(outboundClient, 'get', {
        sourceWorkload: WORKLOAD,
        target: { $case: 'addr', value: toTcpAddress('10.1.2.3', 80) },
      }),
    ).rejects.toMatchObject({ code: status.NOT_FOUND });
    index.delete('EgressNetwork', 'minimesh', 'everything');
    index.delete('EgressNetwork', 'minimesh', 'partner');
    await c.next(4);
    expect(c.messages[3]?.metadata?.kind).toEqual({ $case: 'default', value: 'egress-fallback' });
    index.delete('GatewayHTTPRoute', 'shop', 'partner-ok');
    c.messages.length = 0;
  });

  it('parses Service authorities', () => {
    expect(parseServiceAuthority('web.shop.svc.cluster.local.:8080', 'cluster.local')).toEqual({
      name: 'web',
      namespace: 'shop',
      port: 8080,
    });
    expect(parseServiceAuthority('web.shop.svc.cluster.local', 'cluster.local').port).toBe(80);
    expect(() => parseServiceAuthority('a.b.web.shop.svc.cluster.local', 'cluster.local')).toThrow('expected <name>');
  });

  it('counts requests by method and code', async () => {
    const text = await registry.metrics();
    expect(text).toMatch(/policy_requests_total\{method="GetPort",code="NotFound"\} [1-9]/);
    expect(text).toMatch(/policy_requests_total\{method="WatchPort",code="OK"\} [1-9]/);
  });
});
