import { describe, expect, it } from 'vitest';
import { Backoff, backoffDelay, sleep } from './backoff.js';

describe('backoff', () => {
  it('doubles from initialMs to maxMs, and resets', () => {
    const b = new Backoff({ initialMs: 100, maxMs: 1000 });
    expect([b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([100, 200, 400, 800, 1000]);
    expect(b.failures).toBe(5);
    b.reset();
    expect(b.next()).toBe(100);
  });

  it('jitter draws from [d(1-j), d]', () => {
    expect(backoffDelay(3, { initialMs: 100, maxMs: 10_000, jitter: 0.5 }, () => 1)).toBe(400);
    expect(backoffDelay(3, { initialMs: 100, maxMs: 10_000, jitter: 0.5 }, () => 0)).toBe(800);
    expect(backoffDelay(1e6, { initialMs: 100, maxMs: 10_000 })).toBe(10_000);
  });

  it('sleep ends early when the signal aborts', async () => {
    const c = new AbortController();
    const t0 = Date.now();
    setTimeout(() => c.abort(), 20);
    await sleep(5000, c.signal);
    expect(Date.now() - t0).toBeLessThan(1000);
  });
});
