// V8 heap limits a program sets on itself at start, so they hold however it is launched (`node
// main.mjs` by a container runtime, a test, a benchmark). A busy Node process grows its young
// generation to 2 × 16 MiB semi-spaces and lets the old generation grow far past what is live; for a
// control-plane program that is most of its resident memory under load (minimesh-identity: ~115 MB
// at full Certify load with V8's defaults, see docs/identity.md).
//
// --max-semi-space-size cannot change once the heap exists, so the young generation is capped the way
// it can be at run time: after each GC, when the new space has reached the cap, V8's semi-space growth
// factor is set to 1 (no further growth), and back to 2 below it (V8 shrinks it when the process goes
// quiet). An explicit flag in execArgv or NODE_OPTIONS always wins over these.
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

export interface HeapLimits {
  /** Cap of each of the two young-generation semi-spaces, in MiB. */
  maxSemiSpaceMb?: number;
  /** How far the old generation may grow over what survived the last full GC, in percent. */
  heapGrowingPercent?: number;
}

export interface HeapTuning {
  /** Whether young-generation growth is stopped right now. */
  readonly capped: boolean;
  stop(): void;
}

function explicitlyConfigured(...flags: string[]): boolean {
  const has = (s: string): boolean => flags.some((f) => s.includes(f));
  return process.execArgv.some(has) || has(process.env.NODE_OPTIONS ?? '');
}

const newSpaceBytes = (): number => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;

export function tuneHeap(limits: HeapLimits): HeapTuning {
  if (
    limits.heapGrowingPercent !== undefined &&
    limits.heapGrowingPercent > 0 &&
    !explicitlyConfigured('--heap-growing-percent')
  )
    setFlagsFromString(`--heap-growing-percent=${Math.round(limits.heapGrowingPercent)}`);
  const mb = limits.maxSemiSpaceMb;
  if (mb === undefined || !(mb > 0) || explicitlyConfigured('--max-semi-space-size', '--semi-space-growth-factor'))
    return { capped: false, stop: () => undefined };
  const limit = 2 * mb * 1024 * 1024;
  // Unknown until the first check, which sets the factor either way: the program may have frozen the
  // young generation before it got here (the proxy's heap-start.ts sets the factor to 1 while its modules
  // load), and a first check that assumed "not capped" would leave that freeze in place below the cap.
  let capped: boolean | undefined;
  const check = (): void => {
    const atCap = newSpaceBytes() >= limit;
    if (atCap === capped) return;
    capped = atCap;
    setFlagsFromString(atCap ? '--semi-space-growth-factor=1' : '--semi-space-growth-factor=2');
  };
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ['gc'] });
  check();
  return {
    get capped() {
      return capped === true;
    },
    stop: () => observer.disconnect(),
  };
}
