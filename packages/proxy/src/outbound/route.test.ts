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
    timeouts: {},
    backends: [],
    ...over,
  };
}

const RETRY = {
  maxRetries: 2,
  maxRequestBytes: 1024,
  statusRanges: [[500, 599]] as Array<[number, number]>,
  backoff: { minMs: 0, maxMs: 0, jitter: 0 },
};
const rules = {
  fail: rule('/fail', { fail: { status: 500, message: 'invalid backend' } }),
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

function route(path: string, opts: Partial<FakeRequest> = {}) {
  const next = recorder<RouteTarget, unknown>();
  const req = new FakeRequest(AUTHORITY, { path, ...opts });
  pushRoute({ policies, log })(next.next)(logical, req.asIncoming);
  return { next, req };
}

describe('outbound route', () => {
  it('a request no rule matches goes on without a rule, as the same target each time', () => {
    const next = recorder<RouteTarget, unknown>();
    const handler = pushRoute({ policies, log })(next.next);
    const [a, b] = [new FakeRequest(AUTHORITY, { path: '/other' }), new FakeRequest(AUTHORITY, { path: '/x' })];
    handler(logical, a.asIncoming);
    handler(logical, b.asIncoming);
    expect(next.calls[0]![0]).toEqual({ logical, rule: undefined });
    expect(next.calls[1]![0]).toBe(next.calls[0]![0]);
    expect(next.calls.map(([, r]) => r)).toEqual([a, b]);
  });

  it('a rule that injects a failure answers the request with it, and it goes no further', () => {
    const { next, req } = route('/fail');
    expect(req.events).toEqual(['answer 500 invalid backend']);
    expect(next.calls).toEqual([]);
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
