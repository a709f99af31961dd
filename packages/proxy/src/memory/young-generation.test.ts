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
