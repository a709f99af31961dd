// The balance stage with a fake next stage: an endpoint target goes to its endpoint, a balanced set to
// one of its ready endpoints, an empty set is refused; one target per (Concrete, endpoint).
import { describe, expect, it } from 'vitest';
import { createLogger } from '@minimesh/runtime';
import { EndpointHealth } from '../balance/endpoint-health.js';
import { FailureAccrual } from '../balance/failure-accrual.js';
import { PeakEwma, DEFAULT_PEAK_EWMA } from '../balance/p2c-peak-ewma.js';
import { balancedConcrete, discovered, FakeRequest, recorder } from '../../test/support/stages.js';
import type { Balanced, Concrete, Endpoint } from '../targets.js';
import { pushBalance } from './balance.js';

const health = new EndpointHealth(() => undefined);
const withLoad = (ip: string): Endpoint => ({ ...discovered(ip, 80), load: new PeakEwma(DEFAULT_PEAK_EWMA) });

function setup() {
  const next = recorder<Balanced, FakeRequest>();
  return { next, handler: pushBalance<FakeRequest>(health)(next.next) };
}

describe('outbound balance', () => {
  it('sends a one-endpoint target (a pod IP, the original destination) to that endpoint', () => {
    const { next, handler } = setup();
    const endpoint = discovered('10.0.0.5', 8080);
    const concrete: Concrete = { kind: 'forward', authority: '10.0.0.5:8080', endpoint };
    handler(concrete, new FakeRequest());
    expect(next.calls[0]![0]).toEqual({ concrete, endpoint });
  });

  it('picks among the ready endpoints of a set, and reuses the target of an endpoint', () => {
    const { next, handler } = setup();
    const [a, b] = [withLoad('10.0.0.1'), withLoad('10.0.0.2')];
    a.load!.ready = false;
    const concrete = balancedConcrete('web.shop.svc.cluster.local:80', [a, b]);
    for (let i = 0; i < 20; i++) handler(concrete, new FakeRequest());
    expect(new Set(next.calls.map(([t]) => t.endpoint))).toEqual(new Set([b]));
    expect(new Set(next.calls.map(([t]) => t)).size).toBe(1);
  });

  it('refuses a request for a set without endpoints (503 no endpoints), and goes no further', () => {
    const { next, handler } = setup();
    const req = new FakeRequest();
    handler(balancedConcrete('web.shop.svc.cluster.local:80', []), req);
    expect(req.events).toEqual(['reject MINIMESH_PROXY_NO_ENDPOINTS']);
    expect(next.calls).toEqual([]);
  });

  it('with failure accrual: a set whose every endpoint is ejected is refused at once (503), saying why', () => {
    const next = recorder<Balanced, FakeRequest>();
    const accrual = new FailureAccrual({
      lookup: () => ({ maxFailures: 1, minMs: 5000, maxMs: 5000, jitter: 0 }),
      healthy: health.ready,
      log: createLogger({ name: 'test', level: 'silent' }),
    });
    const handler = pushBalance<FakeRequest>(health, accrual)(next.next);
    const [a, b] = [withLoad('10.0.0.1'), withLoad('10.0.0.2')];
    const concrete = balancedConcrete('web.shop.svc.cluster.local:80', [a, b]);
    for (let i = 0; i < 2; i++) {
      handler(concrete, new FakeRequest());
      const ep = next.calls[i]![0].endpoint;
      ep.load!.end(ep.load!.start(), true); // it answered 500
    }
    expect(new Set(next.calls.map(([t]) => t.endpoint))).toEqual(new Set([a, b]));
    const req = new FakeRequest();
    handler(concrete, req);
    expect(req.events).toEqual(['reject MINIMESH_PROXY_NO_ENDPOINTS']);
    expect(next.calls).toHaveLength(2);
  });
});
