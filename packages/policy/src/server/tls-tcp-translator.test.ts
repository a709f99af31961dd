// The translation of TLSRoutes and TCPRoutes on the index's answers for fixtures/09-tls-tcp-routes.yaml,
// checked on the wire messages as Linkerd's controller fills them (policy-controller/grpc/src/outbound
// {,/tls,/tcp}.rs, linkerd2 edge-26.8.3): a parent with TLSRoutes gets ProxyProtocol.tls (each route's
// metadata the TLSRoute, its hostnames as SNI matches, one rule), an EgressNetwork's default route
// `tls-egress-allow|deny` last; a parent with TCPRoutes ProxyProtocol.opaque with the oldest TCPRoute
// alone; EgressNetwork backendRefs forward to the original destination on their own parent and are
// invalid (Linkerd's messages) anywhere else; HTTPRoute rules resolve the same backendRefs alike.
import { outbound, fromTcpAddress } from '@minimesh/proto';
import { fixtureIndex } from '../index/fixtures/fixture-index.js';
import { describe, expect, it } from 'vitest';
import type { PolicyIndex } from '../index/policy-index.js';
import { EGRESS_DENIED_MESSAGE, toProtoEgress, toProtoOutbound } from './outbound-translator.js';

const fixture = (): PolicyIndex => fixtureIndex('09-tls-tcp-routes.yaml');

function egress(index: PolicyIndex, ip: string, port: number, from = 'batch'): outbound.OutboundPolicy {
  const a = index.egress(ip, port, from);
  if (a.kind !== 'egress') throw new Error(`${ip}:${port} is not egress`);
  const p = toProtoEgress(a.policy, { ip, port });
  // Whatever the translator builds goes over the wire unchanged.
  expect(outbound.OutboundPolicy.decode(outbound.OutboundPolicy.encode(p).finish())).toEqual(p);
  return p;
}

type AnyRouteBackend = { backend?: outbound.Backend; filters: Array<{ kind?: { $case: string; value: unknown } }> };
type AnyDistribution = {
  kind?:
    | { $case: 'empty'; value: object }
    | { $case: 'firstAvailable'; value: { backends: AnyRouteBackend[] } }
    | { $case: 'randomAvailable'; value: { backends: Array<{ weight: number; backend?: AnyRouteBackend }> } };
};

/** "forward 203.0.113.7:443 (EgressNetwork partner:443)", "balance <path> (Service db:5432)", "invalid: <message> (…)". */
function backendText(rb: AnyRouteBackend | undefined): string {
  const b = rb?.backend;
  const m = b?.metadata?.kind;
  const meta =
    m?.$case === 'resource'
      ? `${m.value.kind} ${m.value.name}:${m.value.port}`
      : m?.$case === 'default'
        ? m.value
        : '?';
  const invalid = rb?.filters.find((f) => f.kind?.$case === 'invalid');
  if (invalid) return `invalid: ${(invalid.kind!.value as { message: string }).message} (${meta})`;
  const fi = rb?.filters.find((f) => f.kind?.$case === 'failureInjector');
  if (fi)
    return `fail ${(fi.kind!.value as { status: number }).status}: ${(fi.kind!.value as { message: string }).message} (${meta})`;
  if (b?.kind?.$case === 'forward') {
    const a = fromTcpAddress(b.kind.value.addr!);
    return `forward ${a?.ip}:${a?.port} w${b.kind.value.weight} (${meta})`;
  }
  if (b?.kind?.$case === 'balancer' && b.kind.value.discovery?.kind?.$case === 'dst')
    return `balance ${b.kind.value.discovery.kind.value.path} (${meta})`;
  return `? (${meta})`;
}

function distributionText(d: AnyDistribution | undefined): string[] {
  switch (d?.kind?.$case) {
    case 'firstAvailable':
      return d.kind.value.backends.map(backendText);
    case 'randomAvailable':
      return d.kind.value.backends.map((w) => `${backendText(w.backend)} weight ${w.weight}`);
    case 'empty':
    case undefined:
      return ['empty'];
  }
}

const name = (m: outbound.OutboundPolicy['metadata']) =>
  m?.kind?.$case === 'resource'
    ? `${m.kind.value.kind} ${m.kind.value.namespace}/${m.kind.value.name}`
    : m?.kind?.value;

describe('TLSRoute and TCPRoute translation', () => {
  const index = fixture();

  it('TLSRoutes on a Deny EgressNetwork: ProxyProtocol.tls, SNI matches, then tls-egress-deny (Forbidden)', () => {
    const p = egress(index, '203.0.113.7', 443);
    expect(p.protocol?.kind?.$case).toBe('tls');
    const routes = p.protocol?.kind?.$case === 'tls' ? p.protocol.kind.value.routes : [];
    expect(routes.map((r) => name(r.metadata))).toEqual([
      'TLSRoute minimesh/partner-api',
      'TLSRoute minimesh/partner-any-sni',
      'tls-egress-deny',
    ]);
    expect(routes[0]?.metadata?.kind).toEqual({
      $case: 'resource',
      value: {
        group: 'gateway.networking.k8s.io',
        kind: 'TLSRoute',
        namespace: 'minimesh',
        name: 'partner-api',
        section: '',
        port: 0,
      },
    });
    expect(routes[0]?.snis).toEqual([
      { match: { $case: 'exact', value: 'api.partner.example' } },
      { match: { $case: 'suffix', value: { reverseLabels: ['example', 'partner', 'cdn'] } } },
    ]);
    expect(routes.map((r) => r.rules.length)).toEqual([1, 1, 1]);
    // The parent as backendRef: on to the original destination, the EgressNetwork as metadata.
    expect(distributionText(routes[0]?.rules[0]?.backends)).toEqual([
      'forward 203.0.113.7:443 w1 (EgressNetwork partner:443) weight 1',
    ]);
    expect(routes[0]?.rules[0]?.filters).toEqual([]);
    // No hostnames: every SNI. Backends that cannot be reached carry Linkerd's Invalid filter.
    expect(routes[1]?.snis).toEqual([]);
    expect(distributionText(routes[1]?.rules[0]?.backends)).toEqual([
      'invalid: Route with EgressNetwork backend needs to have the same EgressNetwork as a parent (EgressNetwork elsewhere:443) weight 1',
      'invalid: EgressNetwork not found ghost (EgressNetwork ghost:443) weight 1',
      'invalid: Service not found gone (Service gone:443) weight 1',
    ]);
    // The default route: every SNI, forward, refused by the Forbidden filter.
    expect(routes[2]?.snis).toEqual([]);
    expect(routes[2]?.rules[0]?.filters).toEqual([{ kind: { $case: 'forbidden', value: {} } }]);
    expect(distributionText(routes[2]?.rules[0]?.backends)).toEqual([
      'forward 203.0.113.7:443 w1 (EgressNetwork partner:443)',
    ]);
  });

  it('TCPRoutes: ProxyProtocol.opaque with the oldest TCPRoute alone, no default route after it', () => {
    const p = egress(index, '203.0.113.7', 5432);
    expect(p.protocol?.kind?.$case).toBe('opaque');
    const routes = p.protocol?.kind?.$case === 'opaque' ? p.protocol.kind.value.routes : [];
    expect(routes.map((r) => name(r.metadata))).toEqual(['TCPRoute minimesh/partner-db']);
    expect(distributionText(routes[0]?.rules[0]?.backends)).toEqual([
      'balance db.web.svc.cluster.local:5432 (Service db:5432) weight 1',
    ]);
    // A TCPRoute without backendRefs forwards to the original destination.
    const any = egress(index, '203.0.113.7', 2222);
    const anyRoutes = any.protocol?.kind?.$case === 'opaque' ? any.protocol.kind.value.routes : [];
    expect(anyRoutes.map((r) => name(r.metadata))).toEqual(['TCPRoute minimesh/partner-tcp-any']);
    expect(distributionText(anyRoutes[0]?.rules[0]?.backends)).toEqual([
      'forward 203.0.113.7:2222 w1 (EgressNetwork partner:2222)',
    ]);
  });

  it('HTTPRoute and TLSRoute on one port of a Deny EgressNetwork: the HTTPRoute wins; non-HTTP traffic is refused', () => {
    const p = egress(index, '203.0.113.7', 8443);
    expect(p.protocol?.kind?.$case).toBe('detect');
    const d = p.protocol?.kind?.$case === 'detect' ? p.protocol.kind.value : undefined;
    expect(d?.http1?.routes.map((r) => name(r.metadata))).toEqual([
      'HTTPRoute minimesh/partner-web',
      'http-egress-deny',
    ]);
    const rules = d?.http1?.routes[0]?.rules ?? [];
    // EgressNetwork backendRefs on an HTTPRoute resolve as on a TLSRoute (HTTP's failure injector: 500).
    expect(distributionText(rules[0]?.backends)).toEqual([
      'forward 203.0.113.7:8443 w1 (EgressNetwork partner:8443) weight 1',
    ]);
    expect(distributionText(rules[1]?.backends)).toEqual([
      'fail 500: Route with EgressNetwork backend needs to have the same EgressNetwork as a parent (EgressNetwork elsewhere:8443) weight 1',
    ]);
    expect(d?.opaque?.routes.map((r) => [name(r.metadata), r.rules[0]?.filters])).toEqual([
      ['tcp-egress-deny', [{ kind: { $case: 'forbidden', value: {} } }]],
    ]);
    expect(d?.http1?.routes[1]?.rules[0]?.filters).toEqual([
      { kind: { $case: 'failureInjector', value: { status: 403, message: EGRESS_DENIED_MESSAGE } } },
    ]);
  });

  it('an Allow EgressNetwork ends with tls-egress-allow (no filter)', () => {
    const a = index.egress('198.51.100.9', 443, 'batch');
    if (a.kind !== 'egress') throw new Error('not egress');
    const p = toProtoEgress(
      {
        ...a.policy,
        tlsRoutes: [
          {
            ref: {
              kind: 'resource',
              group: 'gateway.networking.k8s.io',
              resourceKind: 'TLSRoute',
              name: 'x',
              namespace: 'minimesh',
            },
            hostnames: [{ kind: 'exact', value: 'x.example' }],
            backends: [],
          },
        ],
      },
      { ip: '198.51.100.9', port: 443 },
    );
    const routes = p.protocol?.kind?.$case === 'tls' ? p.protocol.kind.value.routes : [];
    expect(routes.map((r) => name(r.metadata))).toEqual(['TLSRoute minimesh/x', 'tls-egress-allow']);
    expect(routes[1]?.rules[0]?.filters).toEqual([]);
    expect(distributionText(routes[0]?.rules[0]?.backends)).toEqual([
      'forward 198.51.100.9:443 w1 (EgressNetwork elsewhere:443)',
    ]);
  });

  it('a TLSRoute on a Service port: ProxyProtocol.tls, no default route; an EgressNetwork backend is invalid there', () => {
    const policy = index.outbound('web', 'db', 443, 'web');
    expect(policy).toBeDefined();
    const p = toProtoOutbound(policy!);
    expect(p.protocol?.kind?.$case).toBe('tls');
    const routes = p.protocol?.kind?.$case === 'tls' ? p.protocol.kind.value.routes : [];
    expect(routes.map((r) => name(r.metadata))).toEqual(['TLSRoute web/db-tls']);
    expect(distributionText(routes[0]?.rules[0]?.backends)).toEqual([
      'invalid: EgressNetwork backends attach to EgressNetwork parents only (EgressNetwork partner:0) weight 1',
    ]);
  });
  it('a TCPRoute on an opaque Service port: ProxyProtocol.opaque with it instead of the default opaq route', () => {
    const p = toProtoOutbound(index.outbound('web', 'db', 5432, 'web')!);
    expect(p.protocol?.kind?.$case).toBe('opaque');
    const routes = p.protocol?.kind?.$case === 'opaque' ? p.protocol.kind.value.routes : [];
    expect(routes.map((r) => name(r.metadata))).toEqual(['TCPRoute web/db-tcp']);
    expect(distributionText(routes[0]?.rules[0]?.backends)).toEqual([
      'balance db.web.svc.cluster.local:5432 (Service db:5432)',
    ]);
  });
});
