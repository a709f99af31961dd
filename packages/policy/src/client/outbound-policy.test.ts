// Outbound routes as a proxy compiles them, from policies the index computes and the server encodes.
import { outbound } from '@minimesh/proto';
import { TEST_CLUSTER } from '../testing.js';
import { fixtureIndex } from '../index/fixtures/fixture-index.js';
import { describe, expect, it } from 'vitest';
import { PolicyIndex } from '../index/policy-index.js';
import { toFallbackPolicy, toProtoOutbound, toUndefinedPortPolicy } from '../server/outbound-translator.js';
import { requestView } from './http-match.js';
import {
  compileOutboundPolicy,
  isRetryableGrpc,
  isRetryableStatus,
  routeOutbound,
  type CompiledOutboundPolicy,
} from './outbound-policy.js';

const SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'shop', annotations: { 'timeout.minimesh.io/request': '5s' } },
  spec: { clusterIP: '10.96.0.10', ports: [{ port: 80 }] },
};
const ROUTE = {
  apiVersion: 'policy.minimesh.io/v1beta3',
  kind: 'HTTPRoute',
  metadata: {
    name: 'slow',
    namespace: 'shop',
    annotations: {
      'retry.minimesh.io/http': '5xx',
      'retry.minimesh.io/limit': '2',
      'retry.minimesh.io/timeout': '200ms',
    },
  },
  spec: {
    parentRefs: [{ group: 'core', kind: 'Service', name: 'web', port: 80 }],
    rules: [
      { matches: [{ path: { type: 'PathPrefix', value: '/slow' } }], timeouts: { request: '300ms' } },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/canary' } }],
        backendRefs: [
          { name: 'web', port: 80, weight: 9 },
          { name: 'gone', port: 80, weight: 1 },
        ],
      },
    ],
  },
};

function compiled(objects: unknown[]): CompiledOutboundPolicy {
  const index = new PolicyIndex(TEST_CLUSTER);
  for (const o of objects) index.apply((o as { kind: 'Service' }).kind, o);
  const policy = index.outbound('shop', 'web', 80, 'shop')!;
  const bytes = outbound.OutboundPolicy.encode(toProtoOutbound(policy)).finish();
  return compileOutboundPolicy(outbound.OutboundPolicy.decode(bytes));
}
const req = (path: string) => requestView('GET', path, 'web.shop.svc.cluster.local:80', () => undefined);

describe('outbound routes', () => {
  it("a Service without routes: one default route with the Service's timeout, balancing over Destination.Get", () => {
    const p = compiled([SERVICE]);
    expect(p.protocol).toBe('detect');
    const hit = routeOutbound(p, 'http1', req('/anything'))!;
    expect(hit.route.meta).toEqual({ group: '', kind: 'default', name: 'http' });
    expect(hit.rule.timeouts).toEqual({ requestMs: 5000 });
    expect(hit.rule.retry).toBeUndefined();
    expect(hit.rule.backends).toMatchObject([{ kind: 'balancer', authority: 'web.shop.svc.cluster.local:80' }]);
  });

  it("an HTTPRoute's rules: their own timeout, the route's retries, weighted backends, a missing backend fails 500", () => {
    const p = compiled([SERVICE, ROUTE]);
    const slow = routeOutbound(p, 'h2', req('/slow/x'))!;
    expect(slow.route.meta).toEqual({ group: 'policy.minimesh.io', kind: 'HTTPRoute', name: 'slow' });
    expect(slow.rule.timeouts).toEqual({ requestMs: 300 });
    expect(slow.rule.retry).toEqual({
      maxRetries: 2,
      grpcCodes: [],
      maxRequestBytes: 65536,
      statusRanges: [[500, 599]],
      timeoutMs: 200,
      backoff: { minMs: 25, maxMs: 250, jitter: 1 },
    });
    expect(isRetryableStatus(slow.rule.retry!, 503)).toBe(true);
    expect(isRetryableStatus(slow.rule.retry!, 404)).toBe(false);
    const canary = routeOutbound(p, 'http1', req('/canary'))!;
    expect(canary.rule.timeouts).toEqual({ requestMs: 5000 });
    expect(canary.rule.backends.map((b) => `${b.kind} ${b.weight}`)).toEqual(['balancer 9', 'fail 1']);
    expect(routeOutbound(p, 'http1', req('/other'))).toBeUndefined();
  });

  it('fallback and undefined-port policies', () => {
    const fb = compileOutboundPolicy(toFallbackPolicy({ ip: '192.0.2.1', port: 443 }));
    expect(routeOutbound(fb, 'http1', req('/'))?.rule.backends).toMatchObject([
      { kind: 'forward', addr: { ip: '192.0.2.1', port: 443 } },
    ]);
    const undef = compileOutboundPolicy(toUndefinedPortPolicy({ namespace: 'shop', name: 'web', port: 81 }));
    expect(undef.protocol).toBe('opaque');
  });

  it('an invalid policy says why', () => {
    expect(compileOutboundPolicy({}).invalid).toBe('no protocol');
  });
});

/** The Gateway API fixture (index/fixtures/06): HTTPRoute filters and a GRPCRoute, as a proxy compiles them. */
function gatewayFixture(svc: string, port: number): CompiledOutboundPolicy {
  const index = fixtureIndex('06-gateway-routes.yaml');
  const [ns = '', name = ''] = svc.split('/');
  const bytes = outbound.OutboundPolicy.encode(toProtoOutbound(index.outbound(ns, name, port, ns)!)).finish();
  return compileOutboundPolicy(outbound.OutboundPolicy.decode(bytes));
}

describe('outbound route filters and gRPC routes', () => {
  const echo = (path: string, headers: Record<string, string> = {}) =>
    requestView('GET', path, 'echo.mesh.svc.cluster.local:80', (n) => headers[n]);

  it("a rule's filters in order, its backends' own filters, the mirror's backend and share", () => {
    const p = gatewayFixture('mesh/echo', 80);
    const hit = routeOutbound(p, 'http1', echo('/', { version: 'two' }))!;
    expect(hit.route.meta.name).toBe('filters');
    expect(hit.rule.filters).toEqual([
      { kind: 'requestHeaders', edit: { add: [['x-add', 'a']], set: [['x-set', '1']], remove: ['x-drop'] } },
      { kind: 'responseHeaders', edit: { add: [], set: [['x-resp', 'r']], remove: [] } },
      {
        kind: 'mirror',
        ratio: 0.25,
        backend: expect.objectContaining({ kind: 'balancer', authority: 'echo-v1.mesh.svc.cluster.local:80' }),
      },
    ]);
    expect(hit.rule.backends).toMatchObject([
      {
        kind: 'balancer',
        authority: 'echo-v2.mesh.svc.cluster.local:80',
        filters: [{ kind: 'requestHeaders', edit: { set: [['x-backend', 'v2']] } }],
      },
    ]);
    expect(hit.rule.grpc).toBe(false);
  });

  it('redirects and rewrites keep what the rule matched (its path prefixes)', () => {
    const p = gatewayFixture('mesh/echo', 80);
    const old = routeOutbound(p, 'http1', echo('/old/x'))!;
    expect(old.rule.prefixes).toEqual(['/old']);
    expect(old.rule.filters).toEqual([
      {
        kind: 'redirect',
        status: 308,
        scheme: 'https',
        host: 'example.com',
        port: 8443,
        path: { kind: 'prefix', value: '/new' },
      },
    ]);
    const api = routeOutbound(p, 'http1', echo('/api/x'))!;
    expect(api.rule.filters).toEqual([{ kind: 'rewrite', host: 'api.internal', path: { kind: 'full', value: '/v2' } }]);
  });

  it('a GRPCRoute: matched on /<service>/<method> and headers, retried on gRPC codes, weighted backends', () => {
    const p = gatewayFixture('mesh/echo', 7070);
    expect(p.protocol).toBe('grpc');
    const grpcReq = (path: string, user?: string) =>
      requestView('POST', path, 'echo.mesh.svc.cluster.local:7070', (n) => (n === 'x-user' ? user : undefined));
    const ping = routeOutbound(p, 'h2', grpcReq('/grpc.Echo/Ping', 'a'))!;
    expect(ping.route.meta).toMatchObject({ kind: 'GRPCRoute', name: 'rpc' });
    expect(ping.rule.grpc).toBe(true);
    expect(ping.rule.backends.map((b) => b.weight)).toEqual([1, 3]);
    expect(ping.rule.retry?.grpcCodes).toEqual([13, 14]);
    expect(isRetryableGrpc(ping.rule.retry!, 14)).toBe(true);
    expect(isRetryableGrpc(ping.rule.retry!, 5)).toBe(false);
    expect(ping.rule.filters).toEqual([
      { kind: 'responseHeaders', edit: { add: [['x-from', 'grpcroute']], set: [], remove: [] } },
    ]);
    // Another method, or the header missing: the rule without matches.
    const other = routeOutbound(p, 'h2', grpcReq('/grpc.Echo/Other', 'a'))!;
    expect(other.rule).not.toBe(ping.rule);
    expect(routeOutbound(p, 'h2', grpcReq('/grpc.Echo/Ping'))!.rule).toBe(other.rule);
  });
});
