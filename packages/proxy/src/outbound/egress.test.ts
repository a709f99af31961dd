// The HTTP egress stage with fake policies and a fake next stage: a request to an address outside the
// cluster networks waits for its policy's first answer before the route stage sees it; an answered one,
// an in-cluster one, a Service name and a proxy without a controller go on at once.
import { describe, expect, it } from 'vitest';
import type { CompiledOutboundPolicy } from '@minimesh/policy/client';
import { balancedConcrete, FakeRequest, logicalOf, recorder } from '../../test/support/stages.js';
import type { OutboundTarget } from '../policy/outbound-policies.js';
import type { Logical } from '../targets.js';
import { pushEgress } from './egress.js';

const POLICY = {
  meta: { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'partner' },
} as CompiledOutboundPolicy;
const OUTSIDE = logicalOf(balancedConcrete('203.0.113.9:80', []), { kind: 'addr', ip: '203.0.113.9', port: 80 });
const INSIDE = logicalOf(balancedConcrete('10.96.0.10:80', []), { kind: 'addr', ip: '10.96.0.10', port: 80 });
const NAMED = logicalOf(balancedConcrete('web.shop.svc.cluster.local:80', []), {
  kind: 'authority',
  authority: 'web.shop.svc.cluster.local:80',
});

function fakePolicies() {
  const asked: string[] = [];
  let release: (p: CompiledOutboundPolicy | undefined) => void = () => undefined;
  let answered = false;
  return {
    asked,
    answer: (p: CompiledOutboundPolicy | undefined) => {
      answered = true;
      release(p);
    },
    policies: {
      isEgress: (ip: string) => !ip.startsWith('10.'),
      whenAnswered: (t: OutboundTarget, ms: number) => {
        asked.push(`${t.kind === 'addr' ? t.ip : t.authority} ${ms}`);
        return answered ? POLICY : new Promise<CompiledOutboundPolicy | undefined>((r) => (release = r));
      },
    },
  };
}

describe('outbound egress (HTTP)', () => {
  it('the first request to an outside address waits for the policy; later ones go on at once', async () => {
    const f = fakePolicies();
    const next = recorder<Logical, FakeRequest>();
    const h = pushEgress({ policies: f.policies, waitMs: 750 })(next.next as never);
    const first = new FakeRequest('partner.example');
    h(OUTSIDE, first.asIncoming);
    await new Promise((r) => setImmediate(r));
    expect(next.calls).toEqual([]);
    f.answer(POLICY);
    await new Promise((r) => setImmediate(r));
    expect(next.calls).toEqual([[OUTSIDE, first]]);
    const second = new FakeRequest('partner.example');
    h(OUTSIDE, second.asIncoming);
    expect(next.calls[1]).toEqual([OUTSIDE, second]);
    expect(f.asked).toEqual(['203.0.113.9 750', '203.0.113.9 750']);
  });

  it('in-cluster addresses, Service names and a proxy without policies do not wait or ask', () => {
    const f = fakePolicies();
    const next = recorder<Logical, FakeRequest>();
    const h = pushEgress({ policies: f.policies, waitMs: 750 })(next.next as never);
    const a = new FakeRequest('10.96.0.10');
    const b = new FakeRequest('web.shop.svc.cluster.local');
    h(INSIDE, a.asIncoming);
    h(NAMED, b.asIncoming);
    expect(next.calls).toEqual([
      [INSIDE, a],
      [NAMED, b],
    ]);
    expect(f.asked).toEqual([]);
    const bare = recorder<Logical, FakeRequest>();
    const c = new FakeRequest('partner.example');
    pushEgress({ policies: undefined, waitMs: 750 })(bare.next as never)(OUTSIDE, c.asIncoming);
    expect(bare.calls).toEqual([[OUTSIDE, c]]);
  });
});
