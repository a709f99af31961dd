// The egress translation on the index's answers for fixtures/08-egress.yaml: the OutboundPolicy a
// client gets for an address an EgressNetwork classifies, as Linkerd's controller encodes it (the
// EgressNetwork as parent, its routes first, then the default allow/deny route; the opaque route), and
// what the proxy's own compiler (client/outbound-policy.ts, which minimesh-proxy enforces) decides
// from it for requests and connections: the end-to-end meaning of Deny and of a route allowing a path.
import { outbound } from '@minimesh/proto';
import { fixtureIndex } from '../index/fixtures/fixture-index.js';
import { describe, expect, it } from 'vitest';
import { compileOutboundPolicy, routeOutbound, type CompiledOutboundPolicy } from '../client/outbound-policy.js';
import { requestView } from '../client/http-match.js';
import type { PolicyIndex } from '../index/policy-index.js';
import { EGRESS_DENIED_MESSAGE, toFallbackPolicy, toProtoEgress } from './outbound-translator.js';

const fixture = (): PolicyIndex => fixtureIndex('08-egress.yaml');

function proto(index: PolicyIndex, ip: string, port: number, from: string): outbound.OutboundPolicy {
  const a = index.egress(ip, port, from);
  const p = a.kind === 'egress' ? toProtoEgress(a.policy, { ip, port }) : toFallbackPolicy({ ip, port });
  // Whatever the translator builds goes over the wire unchanged.
  expect(outbound.OutboundPolicy.decode(outbound.OutboundPolicy.encode(p).finish())).toEqual(p);
  return p;
}

/** What the proxy does with a request: "forward <ip:port>", "<status> <message>", or "balance <authority>". */
function decide(p: CompiledOutboundPolicy, path: string, host = 'partner.example', version: 'http1' | 'h2' = 'http1') {
  const hit = routeOutbound(
    p,
    version,
    requestView('GET', path, host, () => undefined),
  );
  if (!hit) return 'no route';
  const { route, rule } = hit;
  const name = `${route.meta.kind === 'default' ? '' : `${route.meta.kind} `}${route.meta.name}`;
  if (rule.fail) return `${name}: ${rule.fail.status} ${rule.fail.message}`;
  const b = rule.backends[0];
  if (b?.kind === 'forward') return `${name}: forward ${b.addr.ip}:${b.addr.port} (${b.meta.kind} ${b.meta.name})`;
  if (b?.kind === 'balancer') return `${name}: balance ${b.authority}`;
  return `${name}: ${b?.kind ?? 'no backend'}`;
}

describe('egress translation', () => {
  const index = fixture();

  it('Deny: the EgressNetwork is the parent; routes forward what they match, the rest gets 403', () => {
    const p = proto(index, '203.0.113.7', 80, 'batch');
    expect(p.metadata?.kind).toEqual({
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
    expect(p.protocol?.kind?.$case).toBe('detect');
    const d = p.protocol?.kind?.$case === 'detect' ? p.protocol.kind.value : undefined;
    expect(d?.http1?.routes.map((r) => r.metadata?.kind)).toEqual([
      expect.objectContaining({ $case: 'resource', value: expect.objectContaining({ name: 'partner-health' }) }),
      expect.objectContaining({ $case: 'resource', value: expect.objectContaining({ name: 'partner-any' }) }),
      { $case: 'default', value: 'http-egress-deny' },
    ]);
    expect(d?.opaque?.routes.map((r) => [r.metadata?.kind, r.rules[0]?.filters])).toEqual([
      [{ $case: 'default', value: 'tcp-egress-deny' }, [{ kind: { $case: 'forbidden', value: {} } }]],
    ]);
    const c = compileOutboundPolicy(p);
    expect(c.invalid).toBeUndefined();
    expect(c.meta).toEqual({ group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'partner' });
    expect(decide(c, '/health/live')).toBe('HTTPRoute partner-health: forward 203.0.113.7:80 (EgressNetwork partner)');
    expect(decide(c, '/status')).toBe('HTTPRoute partner-any: forward 203.0.113.7:80 (EgressNetwork partner)');
    expect(decide(c, '/status/more')).toBe(`http-egress-deny: 403 ${EGRESS_DENIED_MESSAGE}`);
    expect(decide(c, '/')).toBe(`http-egress-deny: 403 ${EGRESS_DENIED_MESSAGE}`);
    expect(decide(c, '/health', 'partner.example', 'h2')).toBe(
      'HTTPRoute partner-health: forward 203.0.113.7:80 (EgressNetwork partner)',
    );
    expect(c.opaque).toEqual({
      meta: { group: '', kind: 'default', name: 'tcp-egress-deny' },
      refused: { error: 'forbidden', message: 'route tcp-egress-deny: TCP connection forbidden' },
    });
  });

  it('consumer routes: a hostname, a rule to a Service; other hosts and paths are denied', () => {
    const c = compileOutboundPolicy(proto(index, '203.0.113.7', 80, 'web'));
    expect(decide(c, '/get?x=1')).toBe('HTTPRoute partner-get: forward 203.0.113.7:80 (EgressNetwork partner)');
    expect(decide(c, '/api/v1')).toBe('HTTPRoute partner-get: balance api.web.svc.cluster.local:80');
    expect(decide(c, '/get', 'other.example')).toBe(`http-egress-deny: 403 ${EGRESS_DENIED_MESSAGE}`);
    // The producer route does not apply where consumer routes do.
    expect(decide(c, '/health')).toBe(`http-egress-deny: 403 ${EGRESS_DENIED_MESSAGE}`);
  });

  it('Allow: everything is forwarded to the original destination, TCP too', () => {
    const p = proto(index, '203.0.113.10', 8080, 'batch');
    const c = compileOutboundPolicy(p);
    expect(c.meta.name).toBe('partner-host');
    expect(decide(c, '/anything')).toBe('http-egress-allow: forward 203.0.113.10:8080 (EgressNetwork partner-host)');
    expect(c.opaque).toEqual({ meta: { group: '', kind: 'default', name: 'tcp-egress-allow' } });
  });

  it('GRPCRoutes make the port gRPC; other methods get PERMISSION_DENIED under Deny', () => {
    const p = proto(index, '203.0.113.7', 9090, 'batch');
    expect(p.protocol?.kind?.$case).toBe('grpc');
    const c = compileOutboundPolicy(p);
    expect(decide(c, '/partner.Quotes/Get', undefined, 'h2')).toBe(
      'GRPCRoute partner-grpc: forward 203.0.113.7:9090 (EgressNetwork partner)',
    );
    expect(decide(c, '/partner.Quotes/Put', undefined, 'h2')).toBe(`grpc-egress-deny: 7 ${EGRESS_DENIED_MESSAGE}`);
  });

  it('an opaque port gets only the opaque route', () => {
    const p = proto(index, '203.0.113.7', 5432, 'batch');
    expect(p.protocol?.kind?.$case).toBe('opaque');
    const c = compileOutboundPolicy(p);
    expect(c.http1).toEqual([]);
    expect(c.opaque?.refused?.error).toBe('forbidden');
  });

  it('an address no EgressNetwork classifies: the egress fallback forwards everything', () => {
    const c = compileOutboundPolicy(proto(index, '203.0.113.7', 80, 'shop'));
    expect(c.meta).toEqual({ group: '', kind: 'default', name: 'egress-fallback' });
    expect(decide(c, '/x')).toBe('egress-fallback: forward 203.0.113.7:80 (default egress-fallback)');
    expect(c.opaque).toEqual({ meta: { group: '', kind: 'default', name: 'egress-fallback' } });
  });
});
