// The backend stage with a fake next stage: a route's one backend is the Logical's own Concrete.
import { describe, expect, it } from 'vitest';
import { balancedConcrete, discovered, FakeRequest, logicalOf, recorder } from '../../test/support/stages.js';
import type { Concrete } from '../targets.js';
import { pushBackend } from './backend.js';

describe('outbound backend', () => {
  it("hands on the Logical's Concrete, with the request as it came", () => {
    const concrete = balancedConcrete('web.shop.svc.cluster.local:80', [discovered('10.0.0.1', 80)]);
    const next = recorder<Concrete, FakeRequest>();
    const req = new FakeRequest();
    pushBackend<FakeRequest>()(next.next)({ logical: logicalOf(concrete), rule: undefined }, req);
    expect(next.calls).toEqual([[concrete, req]]);
    expect(req.events).toEqual([]);
  });
});
