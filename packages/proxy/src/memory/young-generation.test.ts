import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Each case runs in a fresh node (V8 flags are per process): allocate short-lived garbage in event-loop
// turns, as a server does (the check runs after GCs, between turns), and report the new space.
const DIST = fileURLToPath(new URL('../../dist/memory/young-generation.js', import.meta.url));
const script = (cap: string) => `
const { capYoungGeneration, newSpaceBytes } = await import(${JSON.stringify(DIST)});
const c = ${cap};
let keep = [];
for (let i = 0; i < 3e6; i++) { keep.push({ a: i, b: 'x' + i }); if (keep.length > 20000) { keep = []; await new Promise((r) => setImmediate(r)); } }
process.stdout.write(JSON.stringify({ mb: newSpaceBytes() / 1048576, capped: c ? c.capped : null }));`;

function run(cap: string, args: string[] = []): { mb: number; capped: boolean | null } {
  const r = spawnSync(process.execPath, [...args, '--input-type=module', '-e', script(cap)], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { mb: number; capped: boolean | null };
}

const oldScript = (limit: boolean) => `
const { limitHeapGrowth, oldSpaceBytes } = await import(${JSON.stringify(DIST)});
const applied = ${limit} ? limitHeapGrowth(30) : false;
const live = Array.from({ length: 150000 }, (_, i) => ({ i, s: 'live' + i }));
const batches = []; let peak = 0;
for (let round = 0; round < 400; round++) {
  batches.push(Array.from({ length: 3000 }, (_, i) => ({ a: i, b: 'x' + i, c: [i] })));
  if (batches.length > 40) batches.shift();
  await new Promise((r) => setImmediate(r));
  peak = Math.max(peak, oldSpaceBytes());
}
process.stdout.write(JSON.stringify({ mb: peak / 1048576, applied, live: live.length }));`;

function runOld(limit: boolean, args: string[] = []): { mb: number; applied: boolean } {
  const r = spawnSync(
    process.execPath,
    ['--max-semi-space-size=4', ...args, '--input-type=module', '-e', oldScript(limit)],
    { encoding: 'utf8' },
  );
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { mb: number; applied: boolean };
}

describe('limitHeapGrowth', () => {
  it('keeps the old generation closer to its live size when promoted garbage churns', () => {
    const free = runOld(false);
    const limited = runOld(true);
    expect(limited.applied).toBe(true);
    expect(limited.mb).toBeLessThan(free.mb * 0.75);
  });

  it('leaves an explicit --heap-growing-percent alone', () => {
    expect(runOld(true, ['--heap-growing-percent=200']).applied).toBe(false);
  });
});

describe('capYoungGeneration', () => {
  it('stops the new space growing at the cap (uncapped it grows well past it)', () => {
    const free = run('null');
    const capped = run('capYoungGeneration(2)');
    expect(free.mb).toBeGreaterThan(8);
    expect(capped.capped).toBe(true);
    expect(capped.mb).toBeLessThanOrEqual(8); // 2 × 2 MiB semi-spaces, at most one growth step late
  });

  it('leaves an explicit --max-semi-space-size alone', () => {
    const r = run('capYoungGeneration(1)', ['--max-semi-space-size=8']);
    expect(r.capped).toBe(false);
    expect(r.mb).toBeGreaterThan(4);
  });
});
