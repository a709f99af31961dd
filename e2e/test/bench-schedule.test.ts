// The proxy bench's open-loop schedule (bench/proxy/schedule.mjs): a request is sent once its time has
// come, not one interval later. Before 2026-11-30 the generator counted floor(elapsed * rps) requests as
// due, so request 0 waited for the first interval to pass and every latency carried 1 ms at 1,000 rps.
import { describe, expect, it } from 'vitest';
import { dueCount, scheduledAt } from '../../bench/proxy/schedule.mjs';

describe('the open loop schedule', () => {
  it('sends request 0 at the start', () => {
    expect(dueCount(0, 1000, 10_000)).toBe(1);
    expect(scheduledAt(0, 1000)).toBe(0);
  });

  it('counts a request due from its scheduled time on, not one interval later', () => {
    // At 1,000 rps request 1 is due at 1 ms: not before, and from then on.
    expect(dueCount(0.999, 1000, 10_000)).toBe(1);
    expect(dueCount(1, 1000, 10_000)).toBe(2);
    // At 200 rps, 5 ms apart: 12 ms after the start, requests 0, 1 and 2 (at 0, 5 and 10 ms).
    expect(dueCount(12, 200, 10_000)).toBe(3);
    for (const rps of [1, 200, 1000, 7000]) {
      for (let i = 0; i < 50; i++) expect(dueCount(scheduledAt(i, rps), rps, 10_000)).toBe(i + 1);
    }
  });

  it('never counts more than the loop holds, nor any before it starts', () => {
    expect(dueCount(10_000, 1000, 10_000)).toBe(10_000);
    expect(dueCount(60_000, 1000, 10_000)).toBe(10_000);
    expect(dueCount(-1, 1000, 10_000)).toBe(0);
  });
});
