// The local rate limit on a hand-driven clock: a bucket of rps tokens refilled at rps per second; the
// total limit first, then an override (instead of the per-identity limit) or the identity's own bucket.
import type { CompiledRateLimit } from '@minimesh/policy/client';
import { describe, expect, it } from 'vitest';
import { LocalRateLimit } from './local-rate-limit.js';

const META = { group: 'policy.minimesh.io', kind: 'HTTPLocalRateLimitPolicy', name: 'web-limit' };
const limit = (l: Partial<CompiledRateLimit>): CompiledRateLimit => ({ meta: META, overrides: new Map(), ...l });

/** Requests at `rate` per second for `seconds`; how many were admitted. */
function run(rl: LocalRateLimit, id: string | undefined, rate: number, seconds: number, t0 = 0): number {
  let ok = 0;
  for (let i = 0; i < rate * seconds; i++) if (rl.check(id, t0 + (i * 1000) / rate) === undefined) ok++;
  return ok;
}

describe('LocalRateLimit', () => {
  it('total: a burst of rps, then rps per second', () => {
    const rl = new LocalRateLimit(limit({ total: 50 }), 0);
    for (let i = 0; i < 50; i++) expect(rl.check(undefined, 0)).toBeUndefined();
    expect(rl.check(undefined, 0)).toEqual({
      scope: 'total',
      message: 'total rate limit exceeded: 50rps',
      retryAfterMs: 20,
    });
    expect(rl.check(undefined, 20)).toBeUndefined();
    // 200 rps offered for 10 s: 50 (the burst) + 50 per second.
    const admitted = run(new LocalRateLimit(limit({ total: 50 }), 0), undefined, 200, 10);
    expect(admitted).toBeGreaterThanOrEqual(500);
    expect(admitted).toBeLessThanOrEqual(551);
  });

  it('identity: one bucket per identity; clients without one share a bucket', () => {
    const rl = new LocalRateLimit(limit({ identity: 10 }), 0);
    expect(run(rl, 'a', 100, 5)).toBeLessThanOrEqual(61);
    expect(run(rl, 'b', 100, 5)).toBeGreaterThanOrEqual(50); // its own bucket
    expect(rl.check('b', 10_000)).toBeUndefined();
    for (let i = 0; i < 10; i++) rl.check(undefined, 20_000);
    expect(rl.check(undefined, 20_000)?.message).toBe('per-identity rate limit exceeded: 10rps');
  });

  it('an override replaces the per-identity limit; its identities share it; the total still applies', () => {
    const shared = { requestsPerSecond: 30 };
    const rl = new LocalRateLimit(
      limit({
        total: 100,
        identity: 10,
        overrides: new Map([
          ['batch', shared],
          ['ops', shared],
        ]),
      }),
      0,
    );
    for (let i = 0; i < 30; i++) expect(rl.check(i % 2 ? 'batch' : 'ops', 0)).toBeUndefined();
    expect(rl.check('batch', 0)).toMatchObject({ scope: 'identity', message: 'override rate limit exceeded: 30rps' });
    for (let i = 0; i < 10; i++) expect(rl.check('web', 0)).toBeUndefined();
    expect(rl.check('web', 0)?.scope).toBe('identity');
    // The total comes first: a client with room of its own is refused once the total is used up.
    const rl2 = new LocalRateLimit(limit({ total: 5, identity: 10 }), 0);
    for (let i = 0; i < 5; i++) rl2.check(`c${i}`, 0);
    expect(rl2.check('c9', 0)?.scope).toBe('total');
  });
});
