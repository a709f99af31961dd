import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
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

  afterEach(() => {
    delete process.env.MINIMESH_ORIGINAL_DST_ADDON;
    vi.resetModules();
  });

  it('is false, not a TypeError, with an addon built before the call existed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mm-addon-'));
    try {
      // What an older original_dst.node exports: the socket options only.
      const old = join(dir, 'old-addon.cjs');
      writeFileSync(old, 'module.exports = { getOriginalDst() {}, setTcpUserTimeout() {}, getTcpUserTimeout() {} };');
      process.env.MINIMESH_ORIGINAL_DST_ADDON = old;
      vi.resetModules();
      const fresh = await import('./index.js');
      expect(fresh.stopLoopIdleTime()).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
