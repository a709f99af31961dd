// The balance stage with a fake next stage: an endpoint target goes to its endpoint, a balanced set to
// one of its ready endpoints, an empty set is refused; one target per (Concrete, endpoint).
import { describe, expect, it } from 'vitest';
import { EndpointHealth } from '../balance/endpoint-health.js';
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
});
