import { describe, expect, it } from 'vitest';
import { TokenBucket } from './rate-limit.js';

describe('TokenBucket', () => {
  it('lets a burst through, then spaces requests at the QPS, in order', () => {
    let now = 0;
    const b = new TokenBucket({ qps: 10, burst: 3 }, () => now);
    expect([b.reserve(), b.reserve(), b.reserve()]).toEqual([0, 0, 0]);
    expect(b.reserve()).toBeCloseTo(100);
    expect(b.reserve()).toBeCloseTo(200);
    now = 1000; // refilled by 10, capped at the burst (after the 2 borrowed)
    expect([b.reserve(), b.reserve(), b.reserve()]).toEqual([0, 0, 0]);
    expect(b.reserve()).toBeGreaterThan(0);
    expect(b.delayed).toBe(3);
  });

  it('is off at qps 0', () => {
    const b = new TokenBucket({ qps: 0, burst: 1 });
    expect(Array.from({ length: 100 }, () => b.reserve()).every((w) => w === 0)).toBe(true);
  });
});
