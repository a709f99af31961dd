// tuneHeap in a fresh process: under a burst of short-lived garbage the young generation stops at the
// cap instead of growing to V8's 2 × 16 MiB, and an explicit --max-semi-space-size wins.
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const script = (tune: boolean) => `
  const { getHeapSpaceStatistics } = await import('node:v8');
  const { tuneHeap } = await import(${JSON.stringify(new URL('./heap.ts', import.meta.url).pathname)});
  if (${tune}) tuneHeap({ maxSemiSpaceMb: 1, heapGrowingPercent: 30 });
  let keep = [];
  for (let round = 0; round < 400; round++) {
    // ~1 MB of objects that survive a little while, then die: what a busy server allocates
    const batch = Array.from({ length: 4000 }, (_, i) => ({ i, s: 'x'.repeat(200) }));
    keep.push(batch);
    if (keep.length > 3) keep.shift();
    await new Promise((r) => setImmediate(r));
  }
  const ns = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
  console.log(Math.round(ns / 1048576));`;

const run = (tune: boolean, flags: string[] = []): Promise<number> =>
  new Promise((resolve, reject) =>
    execFile(process.execPath, [...flags, '--import', 'tsx', '--input-type=module', '-e', script(tune)], (err, out) =>
      err ? reject(err) : resolve(Number(String(out).trim())),
    ),
  );

describe('tuneHeap', () => {
  it('keeps the new space at the cap under a garbage burst (V8 alone grows it)', async () => {
    const [tuned, untuned] = await Promise.all([run(true), run(false)]);
    // The observer acts after the GC that grew it: at most one doubling past the cap (2 × 1 MiB).
    expect(tuned).toBeLessThanOrEqual(4);
    expect(untuned).toBeGreaterThan(tuned);
    console.log(`new space: ${tuned} MiB tuned, ${untuned} MiB untuned`);
  }, 60_000);

  it('leaves an explicit --max-semi-space-size alone', async () => {
    expect(await run(true, ['--max-semi-space-size=8'])).toBeGreaterThan(4);
  }, 60_000);
});
