// TLS and TCP (opaque) routes as a proxy compiles them: what an EgressNetwork's policy carries when
// TLSRoutes or TCPRoutes attach to it, in the shape linkerd2's policy controller sends
// (policy-controller/grpc/src/outbound/{tls,tcp}.rs): one rule per route, a RandomAvailable
// distribution of its backendRefs (an EgressNetwork backendRef: a Forward to the original
// destination; a Service: a Balancer; an unusable one: no kind and an Invalid filter), a
// FirstAvailable default backend for a rule without backendRefs, and after the routes the default
// route `tls-egress-allow` / `tls-egress-deny` (Forbidden) without SNIs. Sent through the wire format
// (encode, decode) as a proxy receives it.
import { outbound, toTcpAddress, type meta } from '@minimesh/proto';
import { describe, expect, it } from 'vitest';
import { compileOutboundPolicy, routeTls, sniMatchScore, type CompiledSniMatch } from './outbound-policy.js';

const DST = { ip: '203.0.113.10', port: 443 };

const resource = (group: string, kind: string, name: string, port = 0): meta.Metadata => ({
  kind: { $case: 'resource', value: { group, kind, namespace: 'shop', name, section: '', port } },
});
const defaultMeta = (name: string): meta.Metadata => ({ kind: { $case: 'default', value: name } });

const egressParent = resource('policy.minimesh.io', 'EgressNetwork', 'outside', 443);
const forward = (ip: string, port: number): outbound.Backend => ({
  metadata: egressParent,
  kind: { $case: 'forward', value: { addr: toTcpAddress(ip, port), weight: 1, metricLabels: {} } },
});
const balancer = (authority: string): outbound.Backend => ({
  metadata: resource('core', 'Service', authority.split('.')[0]!, 443),
  kind: {
    $case: 'balancer',
    value: { discovery: { kind: { $case: 'dst', value: { path: authority } } } },
  },
});

type Dist = outbound.TlsRoute_Distribution;
const first = (b: outbound.Backend): Dist => ({
  kind: { $case: 'firstAvailable', value: { backends: [{ backend: b, filters: [] }] } },
});
const random = (...bs: Array<[outbound.Backend | undefined, number, string?]>): Dist => ({
  kind: {
    $case: 'randomAvailable',
    value: {
      backends: bs.map(([backend, weight, invalid]) => ({
        weight,
        backend: {
          ...(backend ? { backend } : { backend: { metadata: defaultMeta('invalid') } }),
          filters: invalid ? [{ kind: { $case: 'invalid', value: { message: invalid } } }] : [],
        },
      })),
    },
  },
});
const FORBIDDEN = [{ kind: { $case: 'forbidden' as const, value: {} } }];

const exact = (value: string) => ({ match: { $case: 'exact' as const, value } });
const suffix = (...reverseLabels: string[]) => ({ match: { $case: 'suffix' as const, value: { reverseLabels } } });

function tlsRoute(
  name: string,
  snis: outbound.TlsRoute['snis'],
  backends: Dist,
  filters: outbound.TlsRoute_Filter[] = [],
): outbound.TlsRoute {
  return {
    metadata: name.startsWith('tls-egress')
      ? defaultMeta(name)
      : resource('gateway.networking.k8s.io', 'TLSRoute', name),
    snis,
    rules: [{ backends, filters }],
  };
}
const denyDefault = tlsRoute('tls-egress-deny', [], first(forward(DST.ip, DST.port)), FORBIDDEN);

function wire(protocol: outbound.ProxyProtocol['kind']): ReturnType<typeof compileOutboundPolicy> {
  const p: outbound.OutboundPolicy = { metadata: egressParent, protocol: { kind: protocol } };
  return compileOutboundPolicy(outbound.OutboundPolicy.decode(outbound.OutboundPolicy.encode(p).finish()));
}
const tls = (...routes: outbound.TlsRoute[]) => wire({ $case: 'tls', value: { routes } });

describe('TLS routes', () => {
  it('compile: SNIs, the route reference, Forward and Balancer backends with weights, the Deny default', () => {
    const p = tls(
      tlsRoute(
        'partner',
        [exact('API.partner.example'), suffix('example', 'partner')],
        random([forward('203.0.113.10', 443), 3], [balancer('proxy.shop.svc.cluster.local:443'), 1]),
      ),
      denyDefault,
    );
    expect(p.invalid).toBeUndefined();
    expect(p.protocol).toBe('tls');
    expect(p.tls).toEqual([
      {
        meta: { group: 'gateway.networking.k8s.io', kind: 'TLSRoute', name: 'partner' },
        ref: { namespace: 'shop', section: '', port: 0 },
        snis: [
          { kind: 'exact', name: 'api.partner.example' },
          { kind: 'suffix', reverseLabels: ['example', 'partner'] },
        ],
        backends: [
          {
            kind: 'forward',
            weight: 3,
            meta: { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside' },
            addr: { ip: '203.0.113.10', port: 443 },
          },
          {
            kind: 'balancer',
            weight: 1,
            meta: { group: 'core', kind: 'Service', name: 'proxy' },
            authority: 'proxy.shop.svc.cluster.local:443',
          },
        ],
      },
      {
        // A default route's one backend is the target's own: left absent (discovery serves it).
        meta: { group: '', kind: 'default', name: 'tls-egress-deny' },
        snis: [],
        refused: { error: 'forbidden', message: 'route tls-egress-deny: TLS connection forbidden' },
      },
    ]);
  });

  it('an unusable backendRef (no kind, an Invalid filter) refuses its share with the controller message', () => {
    const p = tls(
      tlsRoute('mixed', [], random([forward(DST.ip, DST.port), 1], [undefined, 1, 'Service not found gone'])),
    );
    expect(p.tls?.[0]?.refused).toBeUndefined();
    expect(p.tls?.[0]?.backends?.[1]).toEqual({
      kind: 'refused',
      weight: 1,
      meta: { group: '', kind: 'default', name: 'invalid' },
      refused: { error: 'invalid_backend', message: 'Service not found gone' },
    });
  });

  it('a route Invalid filter refuses the route; an Empty distribution has no backend', () => {
    const p = tls(
      tlsRoute('broken', [exact('a.example')], first(forward(DST.ip, DST.port)), [
        { kind: { $case: 'invalid', value: { message: 'bad backendRef' } } },
      ]),
      tlsRoute('empty', [exact('b.example')], { kind: { $case: 'empty', value: {} } }),
    );
    expect(p.tls?.map((r) => r.refused)).toEqual([
      { error: 'invalid_backend', message: 'bad backendRef' },
      { error: 'invalid_backend', message: 'route empty: no backend' },
    ]);
  });

  it.each([
    ['two rules', { ...denyDefault, rules: [denyDefault.rules[0]!, denyDefault.rules[0]!] }],
    ['no rule', { ...denyDefault, rules: [] }],
    ['no distribution', { ...denyDefault, rules: [{ filters: [] }] }],
    ['an empty RandomAvailable', tlsRoute('x', [], random())],
    ['an SNI match without a match', tlsRoute('x', [{}], first(forward(DST.ip, DST.port)))],
    [
      'a Forward without an address',
      tlsRoute('x', [], first({ kind: { $case: 'forward', value: { weight: 1, metricLabels: {} } } })),
    ],
  ])('a policy with %s is invalid (linkerd2-proxy rejects it too)', (_what, route) => {
    const p = tls(route as outbound.TlsRoute);
    expect(p.invalid).toBeDefined();
    expect(p.tls).toBeUndefined();
  });
});

describe('which TLS route a server name takes (linkerd2-proxy tls route find)', () => {
  const m = (s: string): CompiledSniMatch =>
    s.startsWith('*.')
      ? { kind: 'suffix', reverseLabels: s.slice(2).split('.').reverse() }
      : { kind: 'exact', name: s };

  it.each([
    ['example.com', 'example.com', true],
    ['example.com', 'example.com.', true],
    ['example.com', 'foo.example.com', false],
    ['example.com.', 'example.com', false],
    ['example.com.', 'example.com.', true],
    ['*.example.com', 'example.com', false],
    ['*.example.com', 'foo.example.com', true],
    ['*.example.com', 'bar.foo.example.com', true],
    ['*.example.com', 'FOO.Example.COM', true],
    ['*.example.com', 'fooexample.com', false],
    ['*.example.com', 'foo.badexample.com', false],
    ['*.example.com.', 'bar.foo.example.com', false],
    ['*.example.com.', 'bar.foo.example.com.', true],
  ])('%s matches %s: %s', (match, sni, yes) => {
    expect(sniMatchScore(m(match), sni) >= 0).toBe(yes);
  });

  it('ranks exact over suffix, longer over shorter', () => {
    const s = (match: string, sni: string) => sniMatchScore(m(match), sni);
    expect(s('api.example.com', 'api.example.com')).toBeGreaterThan(s('*.example.com', 'api.example.com'));
    expect(s('foo.example.com', 'foo.example.com')).toBeGreaterThan(s('example.com', 'example.com'));
    expect(s('*.foo.example.com', 'a.foo.example.com')).toBeGreaterThan(s('*.example.com', 'a.foo.example.com'));
    expect(s('*.foo.example.com', 'a.foo.example.com')).toBe(s('*.bar.example.com', 'a.bar.example.com'));
  });

  const p = tls(
    tlsRoute('wild', [suffix('example', 'partner')], first(forward(DST.ip, DST.port))),
    tlsRoute('api', [exact('api.partner.example')], first(forward('203.0.113.11', 443))),
    tlsRoute('api-again', [exact('api.partner.example')], first(forward('203.0.113.12', 443))),
    tlsRoute('deep', [suffix('example', 'partner', 'eu')], first(forward(DST.ip, DST.port))),
    denyDefault,
  );
  it.each([
    ['api.partner.example', 'api'],
    ['API.partner.example.', 'api'],
    ['www.partner.example', 'wild'],
    ['x.eu.partner.example', 'deep'],
    ['partner.example', 'tls-egress-deny'],
    ['other.example', 'tls-egress-deny'],
  ])('%s → %s (the most specific; on a tie the first; else the default route without SNIs)', (sni, route) => {
    expect(routeTls(p, sni)?.meta.name).toBe(route);
  });

  it('no route matches: undefined (linkerd2-proxy fails the connection)', () => {
    const only = tls(tlsRoute('api', [exact('api.partner.example')], first(forward(DST.ip, DST.port))));
    expect(routeTls(only, 'other.example')).toBeUndefined();
    expect(routeTls(wire({ $case: 'opaque', value: { routes: [] } }), 'a.example')).toBeUndefined();
  });
});

describe('TCP (opaque) routes with backends', () => {
  const opaque = (...routes: outbound.OpaqueRoute[]) => wire({ $case: 'opaque', value: { routes } });
  const tcpRoute = (
    name: string,
    backends: Dist,
    filters: outbound.OpaqueRoute_Filter[] = [],
  ): outbound.OpaqueRoute => ({
    metadata: name.startsWith('tcp-egress')
      ? defaultMeta(name)
      : resource('gateway.networking.k8s.io', 'TCPRoute', name),
    rules: [{ backends: backends as outbound.OpaqueRoute_Distribution, filters }],
  });

  it('a TCPRoute whose backendRef is the EgressNetwork forwards to the original destination (first route applies)', () => {
    const p = opaque(
      tcpRoute('db', random([forward('203.0.113.10', 9000), 1])),
      tcpRoute('tcp-egress-deny', first(forward('203.0.113.10', 9000)), FORBIDDEN),
    );
    expect(p.opaque).toEqual({
      meta: { group: 'gateway.networking.k8s.io', kind: 'TCPRoute', name: 'db' },
      ref: { namespace: 'shop', section: '', port: 0 },
      backends: [
        {
          kind: 'forward',
          weight: 1,
          meta: { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside' },
          addr: { ip: '203.0.113.10', port: 9000 },
        },
      ],
    });
  });

  it('a Service backendRef balances; Forbidden and Invalid route filters refuse', () => {
    expect(opaque(tcpRoute('svc', random([balancer('db.shop.svc.cluster.local:5432'), 1]))).opaque?.backends).toEqual([
      expect.objectContaining({ kind: 'balancer', authority: 'db.shop.svc.cluster.local:5432' }),
    ]);
    expect(opaque(tcpRoute('tcp-egress-deny', first(forward(DST.ip, 9000)), FORBIDDEN)).opaque?.refused).toEqual({
      error: 'forbidden',
      message: 'route tcp-egress-deny: TCP connection forbidden',
    });
    expect(
      opaque(
        tcpRoute('bad', first(forward(DST.ip, 9000)), [{ kind: { $case: 'invalid', value: { message: 'nope' } } }]),
      ).opaque?.refused,
    ).toEqual({ error: 'invalid_backend', message: 'nope' });
  });
});
