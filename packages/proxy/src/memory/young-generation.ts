// Caps V8's young generation at run time. By default a busy Node process grows its new space to
// 2 × 16 MiB semi-spaces, which alone takes a loaded proxy from ~67 MB to ~100 MB resident. Launching
// node with --max-semi-space-size would cap it, but the proxy is started as `node dist/main.js` by
// whatever runs the pod, so the proxy does it itself: after every GC it looks at the new space and,
// at the cap, sets V8's growth factor to 1 (no further growth); below the cap it allows growth again
// (V8 shrinks the new space when the process goes quiet). An explicit --max-semi-space-size wins.
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** Semi-space cap in MiB (the new space is two semi-spaces). */
export const DEFAULT_MAX_SEMI_SPACE_MB = 4;

export interface YoungGenerationCap {
  /** Whether growth is currently stopped. */
  readonly capped: boolean;
  stop(): void;
}

function explicitlyConfigured(): boolean {
  const has = (s: string) => s.includes('--max-semi-space-size') || s.includes('--semi-space-growth-factor');
  return process.execArgv.some(has) || has(process.env.NODE_OPTIONS ?? '');
}

export function newSpaceBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

export function capYoungGeneration(maxSemiSpaceMb = DEFAULT_MAX_SEMI_SPACE_MB): YoungGenerationCap {
  let capped = false;
  if (explicitlyConfigured() || !(maxSemiSpaceMb > 0)) return { capped, stop: () => undefined };
  const limit = 2 * maxSemiSpaceMb * 1024 * 1024;
  const check = () => {
    const atCap = newSpaceBytes() >= limit;
    if (atCap === capped) return;
    capped = atCap;
    setFlagsFromString(atCap ? '--semi-space-growth-factor=1' : '--semi-space-growth-factor=2');
  };
  const obs = new PerformanceObserver(check);
  obs.observe({ entryTypes: ['gc'] });
  check();
  return {
    get capped() {
      return capped;
    },
    stop: () => obs.disconnect(),
  };
}
