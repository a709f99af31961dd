// Outbound routes as a proxy compiles them, from policies the index computes and the server encodes.
import { outbound } from '@minimesh/proto';
import { describe, expect, it } from 'vitest';
import { PolicyIndex } from '../index/policy-index.js';
import { toFallbackPolicy, toProtoOutbound, toUndefinedPortPolicy } from '../server/outbound-translator.js';
import { TEST_CLUSTER } from '../testing.js';
import { requestView } from './http-match.js';
import {
  compileOutboundPolicy,
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
