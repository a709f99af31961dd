// The outbound route stage with fake policies and a fake next stage: what a route's rule does to a
// request (answer it, bound it, retry it), and what goes on as it is.
import type { CompiledOutboundPolicy, CompiledOutboundRule } from '@minimesh/policy/client';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RetryAttempt } from '../http/retry.js';
import { RouteRetryMetrics } from '../policy/retry-metrics.js';
import { balancedConcrete, discovered, FakeRequest, logicalOf, recorder } from '../../test/support/stages.js';
import type { RouteTarget } from '../targets.js';
import { MirrorRequest } from './mirror.js';
import { pushRoute } from './route.js';

const log = createLogger({ name: 'test', level: 'silent' });
const AUTHORITY = 'web.shop.svc.cluster.local:80';
const logical = logicalOf(balancedConcrete(AUTHORITY, [discovered('10.0.0.1', 80)]), {
  kind: 'authority',
  authority: AUTHORITY,
});
const META = { group: 'policy.minimesh.io', kind: 'HTTPRoute', name: 'web' };
const REF = { namespace: 'shop', section: '', port: 80 };

/** A rule matching paths under `prefix`. */
function rule(prefix: string, over: Partial<CompiledOutboundRule> = {}): CompiledOutboundRule {
  return {
    matches: [{ score: (r) => (r.path.startsWith(prefix) ? [prefix.length] : undefined) }],
    prefixes: [prefix],
    filters: [],
    grpc: false,
    timeouts: {},
    backends: [],
    ...over,
  };
}

const RETRY = {
  maxRetries: 2,
  grpcCodes: [],
  maxRequestBytes: 1024,
  statusRanges: [[500, 599]] as Array<[number, number]>,
  backoff: { minMs: 0, maxMs: 0, jitter: 0 },
};
const MIRROR_BACKEND = {
  kind: 'balancer' as const,
  weight: 1,
  meta: { group: 'core', kind: 'Service', name: 'shadow' },
  filters: [],
  authority: 'shadow.shop.svc.cluster.local:80',
};
const rules = {
  fail: rule('/fail', { fail: { status: 500, message: 'invalid backend' } }),
  grpcFail: rule('/grpc.Echo/Fail', { grpc: true, fail: { status: 14, message: 'unavailable' } }),
  deny: rule('/deny', { fail: { status: 403, message: 'traffic not allowed' } }),
  edit: rule('/edit', {
    filters: [
      { kind: 'requestHeaders', edit: { add: [['x-add', 'a']], set: [], remove: ['x-drop'] } },
      { kind: 'responseHeaders', edit: { add: [], set: [['x-resp', 'r']], remove: [] } },
      { kind: 'rewrite', host: 'api.internal', path: { kind: 'prefix', value: '/v2' } },
    ],
  }),
  redirect: rule('/redirect', { filters: [{ kind: 'redirect', status: 308, scheme: 'https', host: 'example.org' }] }),
  mirror: rule('/mirror', { filters: [{ kind: 'mirror', backend: MIRROR_BACKEND, ratio: 0.5 }] }),
  slow: rule('/slow', { timeouts: { requestMs: 250 } }),
  retry: rule('/retry', { retry: RETRY }),
};
const policy: CompiledOutboundPolicy = {
  meta: META,
  ref: REF,
  protocol: 'detect',
  http1: [{ meta: META, ref: REF, hosts: [], rules: Object.values(rules) }],
  http2: [],
};
const policies = {
  enabled: true,
  get: (t: { kind: string }) => (t.kind === 'authority' ? policy : undefined),
  retryMetrics: new RouteRetryMetrics(new Registry()),
};

function route(path: string, opts: Partial<FakeRequest> = {}, random = () => 0) {
  const next = recorder<RouteTarget, unknown>();
  const req = new FakeRequest(AUTHORITY, { path, ...opts });
  pushRoute({ policies, log, random })(next.next)(logical, req.asIncoming);
  return { next, req };
}

describe('outbound route', () => {
  it('a request no rule matches is answered 404, and goes no further', () => {
    const { next, req } = route('/other');
    expect(req.events).toEqual([`answer 404 no route of ${AUTHORITY} matches the request`]);
    expect(next.calls).toEqual([]);
  });

  it('a policy without routes for the protocol (opaque) lets the request go on without a rule, as the same target each time', () => {
    const opaque: CompiledOutboundPolicy = { ...policy, http1: [], http2: [] };
    const next = recorder<RouteTarget, unknown>();
    const handler = pushRoute({ policies: { ...policies, get: () => opaque }, log })(next.next);
    const [a, b] = [new FakeRequest(AUTHORITY, { path: '/other' }), new FakeRequest(AUTHORITY, { path: '/x' })];
    handler(logical, a.asIncoming);
    handler(logical, b.asIncoming);
    expect(next.calls[0]![0]).toEqual({ logical, rule: undefined });
    expect(next.calls[1]![0]).toBe(next.calls[0]![0]);
    expect(next.calls.map(([, r]) => r)).toEqual([a, b]);
  });

  it('a rule that injects a failure answers the request with it, and it goes no further', () => {
    const { next, req } = route('/fail');
    // The gRPC status (UNKNOWN for a 500) is only used when the request is gRPC (the exchange decides).
    expect(req.events).toEqual(['answer 500 invalid backend grpc-status 2']);
    expect(next.calls).toEqual([]);
  });

  it("an HTTP rule's injected 403 offers PERMISSION_DENIED for a gRPC request (a Deny EgressNetwork's answer)", () => {
    expect(route('/deny').req.events).toEqual(['answer 403 traffic not allowed grpc-status 7']);
  });

  it("a gRPC rule's injected failure is a gRPC status", () => {
    expect(route('/grpc.Echo/Fail').req.events).toEqual(['answer 500 unavailable grpc-status 14']);
  });

  it("a rule's filters edit the request, rewrite it and its response, in order, then it goes on", () => {
    const { next, req } = route('/edit/x', { headers: { 'x-drop': '1', 'x-add': 'z' } });
    expect(req.headers).toEqual({ 'x-add': 'z,a' });
    expect(req.authority).toBe('api.internal');
    expect(req.path).toBe('/v2/x');
    const head: Record<string, unknown> = { 'x-resp': 'old' };
    req.editResponse?.(head);
    expect(head).toEqual({ 'x-resp': 'r' });
    expect(next.calls[0]![0].rule).toBe(rules.edit);
  });

  it('a redirect answers the request with its Location, and it goes no further', () => {
    const { next, req } = route('/redirect/a?b=1');
    expect(req.events).toEqual(['answer 308 redirected https://example.org/redirect/a?b=1']);
    expect(next.calls).toEqual([]);
  });

  it("a mirror sends a copy down the chain to the mirror's backend, for its share, before the request", () => {
    const { next, req } = route('/mirror');
    expect(next.calls).toHaveLength(2);
    const [[mirrorTarget, copy], [target, original]] = next.calls as [[RouteTarget, unknown], [RouteTarget, unknown]];
    expect(mirrorTarget.rule?.backends).toEqual([MIRROR_BACKEND]);
    expect(copy).toBeInstanceOf(MirrorRequest);
    expect((copy as MirrorRequest).exchange).toBeUndefined();
    expect(target.rule).toBe(rules.mirror);
    expect(original).toBe(req);
    // Outside its share (0.5), and a request with a body: no copy.
    expect(route('/mirror', {}, () => 0.7).next.calls).toHaveLength(1);
    expect(route('/mirror', { hasBody: true }).next.calls).toHaveLength(1);
  });

  it("a rule's request timeout is set on the request, which goes on with the rule", () => {
    const { next, req } = route('/slow');
    expect(req.requestTimeoutMs).toBe(250);
    expect(next.calls[0]![0].rule).toBe(rules.slow);
  });

  it('a rule with retries sends the request as attempts: the first goes down the chain', () => {
    const { next, req } = route('/retry');
    expect(next.calls).toHaveLength(1);
    const [target, attempt] = next.calls[0]!;
    expect(target.rule).toBe(rules.retry);
    expect(attempt).toBeInstanceOf(RetryAttempt);
    expect((attempt as RetryAttempt).n).toBe(1);
    expect((attempt as RetryAttempt).exchange).toBe(req);
  });

  it('a body declared larger than the retry buffer is not retried: the request itself goes on', () => {
    const { next, req } = route('/retry', { headers: { 'content-length': '4096' } });
    expect(next.calls[0]![1]).toBe(req);
  });

  it('an HTTP/1 Upgrade, and a target without a policy, take no route', () => {
    expect(route('/fail', { upgrade: true }).next.calls[0]![0].rule).toBeUndefined();
    const next = recorder<RouteTarget, unknown>();
    const req = new FakeRequest('10.0.0.9:80', { path: '/fail' });
    pushRoute({ policies, log })(next.next)(logicalOf(logical.concrete, undefined), req.asIncoming);
    expect(next.calls[0]![0].rule).toBeUndefined();
    expect(req.events).toEqual([]);
  });
});
