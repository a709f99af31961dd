// The consecutive-failures breaker on a hand-driven clock, through the transitions linkerd2-proxy's own
// test walks: admitting → (N failures in a row) ejected → (penalty) probation (one probe) → failure:
// ejected for twice as long / success: admitting, backoff started over; jitter stays within its bounds.
import type { CompiledFailureAccrual } from '@minimesh/policy/client';
import { describe, expect, it } from 'vitest';
import { ConsecutiveFailures } from './consecutive-failures.js';

const CONFIG: CompiledFailureAccrual = { maxFailures: 2, minMs: 1000, maxMs: 100_000, jitter: 0 };

describe('ConsecutiveFailures', () => {
  it('ejects after max failures in a row; a success in between starts the count over', () => {
    const changes: string[] = [];
    const b = new ConsecutiveFailures(CONFIG, Math.random, (c) => changes.push(c));
    expect(b.record(true, 0)).toBeUndefined();
    expect(b.record(false, 1)).toBeUndefined();
    expect(b.record(true, 2)).toBeUndefined();
    expect(b.available(2)).toBe(true);
    expect(b.record(true, 3)).toBe('ejected');
    expect(changes).toEqual(['ejected']);
    expect(b.available(3)).toBe(false);
    expect(b.ejectedUntil).toBe(1003);
    expect(b.penaltyMs).toBe(1000);
  });

  it('ignores responses while ejected; after the penalty admits one probe; a failed probe doubles the penalty', () => {
    const b = new ConsecutiveFailures(CONFIG);
    b.record(true, 0);
    b.record(true, 0); // ejected until 1000
    expect(b.record(false, 500)).toBeUndefined(); // a straggler: ignored
    expect(b.stateAt(999)).toBe('ejected');
    expect(b.available(1000)).toBe(true);
    expect(b.stateAt(1000)).toBe('probation');
    b.picked(1000);
    expect(b.available(1001)).toBe(false); // one probe at a time
    expect(b.record(true, 1100)).toBe('ejected');
    expect(b.ejectedUntil).toBe(1100 + 2000);
    expect(b.available(3099)).toBe(false);
    expect(b.available(3100)).toBe(true);
    b.picked(3100);
    expect(b.record(true, 3200)).toBe('ejected');
    expect(b.ejectedUntil).toBe(3200 + 4000);
  });

  it('a successful probe restores the endpoint and starts the backoff over', () => {
    const changes: string[] = [];
    const b = new ConsecutiveFailures(CONFIG, Math.random, (c) => changes.push(c));
    b.record(true, 0);
    b.record(true, 0);
    b.available(1000);
    b.picked(1000);
    expect(b.record(false, 1010)).toBe('restored');
    expect(b.stateAt(1010)).toBe('admitting');
    expect(changes).toEqual(['ejected', 'restored']);
    b.record(true, 2000);
    b.record(true, 2000);
    expect(b.ejectedUntil).toBe(3000); // min penalty again
  });

  it('in probation, an outcome before the probe went does not decide', () => {
    const b = new ConsecutiveFailures(CONFIG);
    b.record(true, 0);
    b.record(true, 0);
    expect(b.stateAt(1000)).toBe('probation');
    expect(b.record(true, 1000)).toBeUndefined();
    expect(b.available(1000)).toBe(true);
  });

  it('a probe that never answers frees the probation after a max penalty', () => {
    const b = new ConsecutiveFailures({ ...CONFIG, maxMs: 5000 });
    b.record(true, 0);
    b.record(true, 0);
    b.available(1000);
    b.picked(1000);
    expect(b.available(6000)).toBe(false);
    expect(b.available(6001)).toBe(true);
  });

  it('the penalty stops growing at the max', () => {
    const b = new ConsecutiveFailures({ ...CONFIG, maxMs: 3000 });
    let now = 0;
    b.record(true, now);
    b.record(true, now);
    const penalties: number[] = [b.penaltyMs];
    for (let i = 0; i < 4; i++) {
      now = b.ejectedUntil;
      b.available(now);
      b.picked(now);
      b.record(true, now);
      penalties.push(b.penaltyMs);
    }
    expect(penalties).toEqual([1000, 2000, 3000, 3000, 3000]);
  });

  it.each([0, 0.5, 0.999])('jitter (ratio 0.5, random %d) adds up to half the base, never past the max', (r) => {
    const b = new ConsecutiveFailures({ maxFailures: 1, minMs: 1000, maxMs: 1200, jitter: 0.5 }, () => r);
    b.record(true, 0);
    expect(b.penaltyMs).toBe(Math.min(1000 + r * 0.5 * 1000, 1200));
  });
});
