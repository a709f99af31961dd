// The backend stage with a fake next stage and a fake discovery: weighted backends, each its own
// Concrete from its own Destination.Get; 0-weight backends get nothing; failure-injecting backends
// answer their share; backend filters; without a rule the Logical's own Concrete.
import type { CompiledBackend, CompiledOutboundRule } from '@minimesh/policy/client';
import { describe, expect, it } from 'vitest';
import { balancedConcrete, discovered, FakeRequest, logicalOf, recorder } from '../../test/support/stages.js';
import type { Concrete, Logical, RouteTarget } from '../targets.js';
import { RetryAttempt } from '../http/retry.js';
import type { HttpExchange } from '../http/exchange.js';
import { RouteAnswer } from '../errors.js';
import { backendsReady, pickWeighted, pushBackend } from './backend.js';

const WEB = 'web.shop.svc.cluster.local:80';
const V2 = 'web-v2.shop.svc.cluster.local:80';
const META = { group: 'core', kind: 'Service', name: 'web' };
const web = balancedConcrete(WEB, [discovered('10.0.0.1', 80)]);
const v2 = balancedConcrete(V2, [discovered('10.0.0.2', 80)]);
const logical = logicalOf(web, { kind: 'authority', authority: WEB });

/** A discovery that knows web-v2 at once and web-v3 after a turn of the event loop. */
const discovery = {
  asked: [] as string[],
  httpNow: (host: string | undefined): Logical | undefined => (host === V2 ? logicalOf(v2) : undefined),
  http: (host: string | undefined): Promise<Logical> => {
    discovery.asked.push(String(host));
    return host === 'web-v3.shop.svc.cluster.local:80'
      ? Promise.resolve(logicalOf(balancedConcrete(host, [discovered('10.0.0.3', 80)])))
      : Promise.reject(Object.assign(new Error(`no such service ${host}`), { code: 'MINIMESH_PROXY_NO_ENDPOINTS' }));
  },
};

const balancer = (authority: string, weight: number, over: Partial<CompiledBackend> = {}): CompiledBackend =>
  ({ kind: 'balancer', authority, weight, meta: META, filters: [], ...over }) as CompiledBackend;

function ruleOf(backends: CompiledBackend[], grpc = false): CompiledOutboundRule {
  return { matches: [], prefixes: [], filters: [], grpc, timeouts: {}, backends };
}

function run(rule: CompiledOutboundRule | undefined, r: number, req = new FakeRequest(WEB)) {
  const next = recorder<Concrete, FakeRequest>();
  const target: RouteTarget = { logical, rule };
  pushBackend<FakeRequest>({ discovery, random: () => r })(next.next)(target, req);
  return { next, req };
}

describe('pickWeighted', () => {
  it('picks by weight; 0-weight backends get nothing; all 0: none', () => {
    const bs = [{ weight: 90 }, { weight: 0 }, { weight: 10 }];
    expect(pickWeighted(bs, 0)).toBe(bs[0]);
    expect(pickWeighted(bs, 0.8999)).toBe(bs[0]);
    expect(pickWeighted(bs, 0.9)).toBe(bs[2]);
    expect(pickWeighted(bs, 0.9999999)).toBe(bs[2]);
    expect(pickWeighted([{ weight: 0 }, { weight: 0 }], 0.5)).toBeUndefined();
    expect(pickWeighted([{ weight: 0 }], 0.5)).toBeUndefined();
  });

  it('a 90/10 split over many uniform draws is 90/10', () => {
    const bs = [{ weight: 90 }, { weight: 10 }];
    let first = 0;
    for (let i = 0; i < 1000; i++) if (pickWeighted(bs, i / 1000) === bs[0]) first++;
    expect(first).toBe(900);
  });
});

describe('outbound backend', () => {
  it("without a rule, or with the Logical's own Service as backend: the Logical's Concrete", () => {
    expect(run(undefined, 0).next.calls[0]![0]).toBe(web);
    expect(run(ruleOf([balancer(WEB, 1)]), 0).next.calls[0]![0]).toBe(web);
  });

  it('another backend is its own Concrete, from discovery (at once, or once destination answered)', async () => {
    const rule = ruleOf([balancer(WEB, 90), balancer(V2, 10)]);
    expect(run(rule, 0.1).next.calls[0]![0]).toBe(web);
    expect(run(rule, 0.95).next.calls[0]![0]).toBe(v2);
    const later = run(ruleOf([balancer('web-v3.shop.svc.cluster.local:80', 1)]), 0);
    expect(later.next.calls).toEqual([]);
    await Promise.resolve();
    await Promise.resolve();
    expect(later.next.calls[0]![0]).toMatchObject({ authority: 'web-v3.shop.svc.cluster.local:80' });
  });

  it('a backend destination cannot resolve refuses the request', async () => {
    const { req } = run(ruleOf([balancer('gone.shop.svc.cluster.local:80', 1)]), 0);
    await new Promise((r) => setImmediate(r));
    expect(req.events).toEqual(['reject MINIMESH_PROXY_NO_ENDPOINTS']);
  });

  it('a 0-weight backend gets nothing; all weights 0 answer 500', () => {
    const rule = ruleOf([balancer(WEB, 0), balancer(V2, 100)]);
    for (const r of [0, 0.5, 0.999]) expect(run(rule, r).next.calls[0]![0]).toBe(v2);
    const none = run(ruleOf([balancer(WEB, 0)]), 0);
    expect(none.next.calls).toEqual([]);
    expect(none.req.events).toEqual([`answer 500 route ${WEB}: every backend has weight 0`]);
  });

  it('a failure-injecting backend answers its share with its status (a gRPC one with its gRPC status)', () => {
    const gone: CompiledBackend = {
      kind: 'fail',
      weight: 1,
      meta: META,
      filters: [],
      status: 500,
      message: 'Service not found gone',
    };
    const rule = ruleOf([balancer(WEB, 1), gone]);
    expect(run(rule, 0.2).next.calls).toHaveLength(1);
    const failed = run(rule, 0.7);
    expect(failed.next.calls).toEqual([]);
    expect(failed.req.events).toEqual(['answer 500 Service not found gone']);
    const grpc = run(ruleOf([{ ...gone, status: 14 }], true), 0);
    expect(grpc.req.events).toEqual(['answer 500 Service not found gone grpc-status 14']);
  });

  it("a backend's own filters edit the request (and its response) that goes to it", () => {
    const withFilters = balancer(V2, 1, {
      filters: [
        { kind: 'requestHeaders', edit: { add: [], set: [['x-backend', 'v2']], remove: [] } },
        { kind: 'responseHeaders', edit: { add: [], set: [['x-from', 'v2']], remove: [] } },
      ],
    });
    const { req, next } = run(ruleOf([withFilters]), 0);
    expect(next.calls[0]![0]).toBe(v2);
    expect(req.headers['x-backend']).toBe('v2');
    const head: Record<string, unknown> = {};
    req.editResponse?.(head);
    expect(head).toEqual({ 'x-from': 'v2' });
  });

  it('a forward backend goes to its address as it is', () => {
    const fwd: CompiledBackend = {
      kind: 'forward',
      weight: 1,
      meta: META,
      filters: [],
      addr: { ip: '192.0.2.1', port: 443 },
    };
    const c = run(ruleOf([fwd]), 0).next.calls[0]![0];
    expect(c).toMatchObject({ kind: 'forward', authority: '192.0.2.1:443', endpoint: { ip: '192.0.2.1', port: 443 } });
  });

  it("a retry's attempt is routed at once or refused: a backend not yet discovered, a failure injector's answer", () => {
    const ex = new FakeRequest(WEB) as unknown as HttpExchange;
    const attempt = new RetryAttempt(ex, 2);
    const next = recorder<Concrete, RetryAttempt>();
    const stage = pushBackend<RetryAttempt>({ discovery, random: () => 0 })(next.next);
    stage({ logical, rule: ruleOf([balancer('web-v3.shop.svc.cluster.local:80', 1)]) }, attempt);
    expect((attempt.rejected as { code: string }).code).toBe('MINIMESH_PROXY_NO_ENDPOINTS');
    const gone: CompiledBackend = { kind: 'fail', weight: 1, meta: META, filters: [], status: 14, message: 'gone' };
    const second = new RetryAttempt(ex, 2);
    stage({ logical, rule: ruleOf([gone], true) }, second);
    expect(second.rejected).toBeInstanceOf(RouteAnswer);
    expect(second.rejected).toMatchObject({ status: 500, grpcStatus: 14 });
    expect(next.calls).toEqual([]);
  });

  it("backendsReady: nothing to wait for when every backend is known, else destination's answers", async () => {
    expect(backendsReady(discovery, ruleOf([balancer(WEB, 1), balancer(V2, 1)]), logical)).toBeUndefined();
    const waiting = backendsReady(
      discovery,
      ruleOf([balancer('web-v3.shop.svc.cluster.local:80', 1), balancer(V2, 1)]),
      logical,
    );
    expect(waiting).toBeInstanceOf(Promise);
    await waiting;
  });
});
