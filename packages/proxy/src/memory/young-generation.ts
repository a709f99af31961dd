// Caps V8's young generation at run time. By default a busy Node process grows its new space to
// 2 × 16 MiB semi-spaces, which alone takes a loaded proxy from ~67 MB to ~100 MB resident. Launching
// node with --max-semi-space-size would cap it, but the proxy is started as `node dist/main.js` by
// whatever runs the pod, so the proxy does it itself: after every GC it looks at the new space and,
// at the cap, sets V8's growth factor to 1 (no further growth); below the cap it allows growth again
// (V8 shrinks the new space when the process goes quiet). An explicit --max-semi-space-size wins.
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** Semi-space cap in MiB (the new space is two semi-spaces). */
export const DEFAULT_MAX_SEMI_SPACE_MB = 2;

export interface YoungGenerationCap {
  /** Whether growth is currently stopped. */
  readonly capped: boolean;
  stop(): void;
}

function explicitlyConfigured(...flags: string[]): boolean {
  const has = (s: string) => flags.some((f) => s.includes(f));
  return process.execArgv.some(has) || has(process.env.NODE_OPTIONS ?? '');
}

/** Old-generation growth after a full GC, in percent over the live size (V8 picks up to 300 %). */
export const DEFAULT_HEAP_GROWING_PERCENT = 30;

/**
 * Lets the old generation grow only `percent` over what survived the last full GC before the next one.
 * Under load, request objects held across scavenges (by keep-alive connections between requests) are
 * promoted and die there; with V8's default factor the outbound proxy's old space reached ~40 MB for
 * ~17 MB live. An explicit --heap-growing-percent wins. Returns whether it was applied.
 */
export function limitHeapGrowth(percent = DEFAULT_HEAP_GROWING_PERCENT): boolean {
  if (explicitlyConfigured('--heap-growing-percent') || !(percent > 0)) return false;
  setFlagsFromString(`--heap-growing-percent=${Math.round(percent)}`);
  return true;
}

export function oldSpaceBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_size ?? 0;
}

export function newSpaceBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

export function capYoungGeneration(maxSemiSpaceMb = DEFAULT_MAX_SEMI_SPACE_MB): YoungGenerationCap {
  let capped = false;
  if (explicitlyConfigured('--max-semi-space-size', '--semi-space-growth-factor') || !(maxSemiSpaceMb > 0))
    return { capped, stop: () => undefined };
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
