import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { stopLoopIdleTime } from './index.js';

// This test file runs in its own process (vitest's forks pool), so turning the accounting off here
// touches no other test's event loop.
describe('stopLoopIdleTime', () => {
  it("turns libuv's idle-time accounting off once: the loop then counts no idle time", async () => {
    const before = performance.eventLoopUtilization();
    await sleep(100);
    // Accounting on (Node's default): the 100 ms asleep in the poll are idle time.
    expect(performance.eventLoopUtilization(before).idle).toBeGreaterThan(50);

    expect(stopLoopIdleTime()).toBe(true);
    const after = performance.eventLoopUtilization();
    await sleep(100);
    expect(performance.eventLoopUtilization(after).idle).toBeLessThan(5);

    // Already off: nothing to do.
    expect(stopLoopIdleTime()).toBe(false);
  });
});
