// The outbound translator on the index's answers for the Gateway API fixtures (index/fixtures/06 and
// 07): the proxy API messages a client gets, field by field where Linkerd's encoder fixes them (the
// protocol per appProtocol and GRPCRoutes, weighted balancers, failure injectors for unreachable
// backends, filters, retries), and a round trip through the wire format.
import { outbound } from '@minimesh/proto';
import { fixtureIndex } from '../index/fixtures/fixture-index.js';
import { describe, expect, it } from 'vitest';
import type { PolicyIndex } from '../index/policy-index.js';
import { toProtoOutbound } from './outbound-translator.js';

const indexOf = fixtureIndex;

function proto(index: PolicyIndex, svc: string, port: number, from: string): outbound.OutboundPolicy {
  const [ns = '', name = ''] = svc.split('/');
  const policy = index.outbound(ns, name, port, from);
  if (!policy) throw new Error(`no policy for ${svc}:${port}`);
  const p = toProtoOutbound(policy);
  // Whatever the translator builds goes over the wire unchanged.
  expect(outbound.OutboundPolicy.decode(outbound.OutboundPolicy.encode(p).finish())).toEqual(p);
  return p;
}

const ms = (d: { seconds: bigint; nanos: number } | undefined) =>
  d === undefined ? undefined : Number(d.seconds) * 1000 + d.nanos / 1e6;

describe('outbound translation of Gateway API routes', () => {
  const index = indexOf('06-gateway-routes.yaml');

  it('an HTTP/1 port: the canary split as weighted balancers, routes named by their group', () => {
    const p = proto(index, 'mesh/echo', 80, 'mesh');
    expect(p.protocol?.kind?.$case).toBe('http1');
    const routes = p.protocol?.kind?.$case === 'http1' ? p.protocol.kind.value.routes : [];
    expect(routes.map((r) => r.metadata?.kind)).toEqual([
      {
        $case: 'resource',
        value: {
          group: 'gateway.networking.k8s.io',
          kind: 'HTTPRoute',
          name: 'split',
          namespace: 'mesh',
          section: '',
          port: 0,
        },
      },
      {
        $case: 'resource',
        value: {
          group: 'gateway.networking.k8s.io',
          kind: 'HTTPRoute',
          name: 'filters',
          namespace: 'mesh',
          section: '',
          port: 0,
        },
      },
    ]);
    const split = routes[0]!.rules[0]!.backends?.kind;
    expect(split?.$case).toBe('randomAvailable');
    const backends = split?.$case === 'randomAvailable' ? split.value.backends : [];
    expect(
      backends.map((b) => {
        const k = b.backend?.backend?.kind;
        return [
          b.weight,
          k?.$case === 'balancer' && k.value.discovery?.kind?.$case === 'dst' ? k.value.discovery.kind.value.path : '',
        ];
      }),
    ).toEqual([
      [70, 'echo-v1.mesh.svc.cluster.local:80'],
      [30, 'echo-v2.mesh.svc.cluster.local:80'],
    ]);
  });

  it('filters: header modifiers, a sampled mirror (extension), a 308 redirect, a URL rewrite (extension), backend filters', () => {
    const p = proto(index, 'mesh/echo', 80, 'mesh');
    const routes = p.protocol?.kind?.$case === 'http1' ? p.protocol.kind.value.routes : [];
    const [toV2, redirect, rewrite] = routes[1]!.rules;
    expect(toV2!.filters.map((f) => f.kind?.$case)).toEqual([
      'requestHeaderModifier',
      'responseHeaderModifier',
      'requestMirror',
    ]);
    const mirror = toV2!.filters[2]!.kind;
    expect(mirror?.$case === 'requestMirror' && mirror.value.ratio).toEqual({ numerator: 25, denominator: 100 });
    expect(mirror?.$case === 'requestMirror' && mirror.value.backend?.kind?.$case).toBe('balancer');
    const d = toV2!.backends?.kind;
    const bf = d?.$case === 'randomAvailable' ? d.value.backends[0]?.backend?.filters : [];
    expect(bf?.[0]?.kind).toMatchObject({
      $case: 'requestHeaderModifier',
      value: { set: { headers: [{ name: 'X-Backend', value: Buffer.from('v2') }] } },
    });
    expect(redirect!.filters[0]?.kind).toEqual({
      $case: 'redirect',
      value: {
        scheme: { type: { $case: 'registered', value: 1 } },
        host: 'example.com',
        path: { replace: { $case: 'prefix', value: '/new' } },
        port: 8443,
        status: 308,
      },
    });
    expect(rewrite!.filters[0]?.kind).toEqual({
      $case: 'urlRewrite',
      value: { host: 'api.internal', path: { replace: { $case: 'full', value: '/v2' } } },
    });
    // timeouts.backendRequest (500ms) bounds the one attempt: shorter than timeouts.request (2s).
    expect(ms(rewrite!.timeouts?.request)).toBe(500);
  });

  it('an undeclared port with routes of both HTTPRoute groups: detection, the same routes for HTTP/1 and HTTP/2', () => {
    const p = proto(index, 'mesh/echo', 8080, 'other');
    expect(p.protocol?.kind?.$case).toBe('detect');
    const d = p.protocol?.kind?.$case === 'detect' ? p.protocol.kind.value : undefined;
    const names = (rs: outbound.HttpRoute[] | undefined) =>
      (rs ?? []).map((r) =>
        r.metadata?.kind?.$case === 'resource' ? `${r.metadata.kind.value.group}/${r.metadata.kind.value.name}` : '',
      );
    expect(names(d?.http1?.routes)).toEqual(['gateway.networking.k8s.io/alt-gateway', 'policy.minimesh.io/alt-policy']);
    expect(names(d?.http2?.routes)).toEqual(names(d?.http1?.routes));
  });

  it('GRPCRoutes make the port gRPC: rpc matches, gRPC retry conditions, the response modifier as an extension', () => {
    const p = proto(index, 'mesh/echo', 7070, 'mesh');
    expect(p.protocol?.kind?.$case).toBe('grpc');
    const routes = p.protocol?.kind?.$case === 'grpc' ? p.protocol.kind.value.routes : [];
    const [rule1, rule2] = routes[0]!.rules;
    expect(rule1!.matches).toEqual([
      {
        rpc: { service: 'grpc.Echo', method: 'Ping' },
        headers: [{ name: 'x-user', value: { $case: 'exact', value: Buffer.from('a') } }],
      },
    ]);
    expect(rule2!.matches).toEqual([{ rpc: { service: '', method: '' }, headers: [] }]);
    expect(rule1!.retry?.maxRetries).toBe(2);
    expect(rule1!.retry?.conditions).toEqual({
      cancelled: false,
      deadineExceeded: false,
      resourceExhausted: false,
      internal: true,
      unavailable: true,
    });
    expect(ms(rule1!.timeouts?.request)).toBe(3000);
    expect(rule1!.filters.map((f) => f.kind?.$case)).toEqual(['responseHeaderModifier']);
  });
});

describe('outbound translation of bad input', () => {
  const index = indexOf('07-gateway-bad-input.yaml');
  const routes = () => {
    const p = proto(index, 'shop/web', 80, 'shop');
    return p.protocol?.kind?.$case === 'http1' ? p.protocol.kind.value.routes : [];
  };

  it('unreachable backends keep their share and answer 500 (a backend without endpoints and a failure injector)', () => {
    const d = routes()[0]!.rules[0]!.backends?.kind;
    const backends = d?.$case === 'randomAvailable' ? d.value.backends : [];
    expect(backends.map((b) => b.weight)).toEqual([50, 50, 10, 10]);
    expect(backends[0]!.backend?.backend?.kind?.$case).toBe('balancer');
    for (const [i, meta, message] of [
      [
        1,
        {
          $case: 'resource',
          value: { group: 'core', kind: 'Service', name: 'gone', namespace: 'shop', section: '', port: 80 },
        },
        'Service not found gone',
      ],
      [2, { $case: 'default', value: 'invalid' }, 'unsupported backend type core ConfigMap'],
      [3, { $case: 'default', value: 'invalid' }, 'Service shop/web-canary has no port 8080'],
    ] as const) {
      const b = backends[i]!.backend!;
      expect(b.backend?.metadata?.kind).toEqual(meta);
      expect(b.backend?.kind).toBeUndefined();
      expect(b.filters).toEqual([{ kind: { $case: 'failureInjector', value: { status: 500, message } } }]);
    }
  });

  it('a rule whose weights are all 0 sends nowhere: an empty distribution and a 500 after its own filters', () => {
    const rule = routes()[1]!.rules[0]!;
    expect(rule.backends?.kind).toEqual({ $case: 'empty', value: {} });
    expect(rule.filters.at(-1)?.kind).toMatchObject({ $case: 'failureInjector', value: { status: 500 } });
  });

  it('conflicting matches keep the order of precedence: the older route, then the first rule', () => {
    const r = routes();
    const names = r.map((x) => (x.metadata?.kind?.$case === 'resource' ? x.metadata.kind.value.name : ''));
    expect(names).toEqual(['a-missing-backends', 'b-zero-weights', 'c-same-match']);
  });

  it('a gRPC backend that cannot be reached answers UNAVAILABLE, as the GRPCRoute spec says', () => {
    const ix = indexOf('07-gateway-bad-input.yaml');
    ix.apply('GRPCRoute', {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GRPCRoute',
      metadata: { name: 'g', namespace: 'shop' },
      spec: {
        parentRefs: [{ group: '', kind: 'Service', name: 'web-canary' }],
        rules: [
          {
            backendRefs: [
              { name: 'gone', port: 80, weight: 1 },
              { name: 'web', port: 80, weight: 1 },
            ],
          },
        ],
      },
    });
    const p = proto(ix, 'shop/web-canary', 80, 'shop');
    expect(p.protocol?.kind?.$case).toBe('grpc');
    const rule = p.protocol?.kind?.$case === 'grpc' ? p.protocol.kind.value.routes[0]!.rules[0]! : undefined;
    const d = rule?.backends?.kind;
    const gone = d?.$case === 'randomAvailable' ? d.value.backends[0]?.backend : undefined;
    expect(gone?.filters).toEqual([
      { kind: { $case: 'failureInjector', value: { code: 14, message: 'Service not found gone' } } },
    ]);
  });
});
