// A Service's failure-accrual (circuit breaking) annotations, as Linkerd's policy controller reads them:
// balancer.linkerd.io/failure-accrual: consecutive, with -consecutive-max-failures (default 7),
// -consecutive-min-penalty (1s), -consecutive-max-penalty (1m) and -consecutive-jitter-ratio (0.5).
// minimesh reads the same names under balancer.minimesh.io/ too (that one wins when both are set).
//
// Bad input: Linkerd's controller drops the whole configuration when one value does not parse (no
// circuit breaking at all). Here each bad value is reported (a warning when a proxy watches the
// Service) and replaced by its default, so a typo in the jitter does not silently switch the breaker
// off; an unknown mode is reported and means no breaker, as in Linkerd.
import type { FailureAccrual } from '../model.js';
import { duration } from './route-parts.js';

export const FAILURE_ACCRUAL_PREFIXES = ['balancer.minimesh.io/', 'balancer.linkerd.io/'] as const;

export const FAILURE_ACCRUAL_DEFAULTS = {
  maxFailures: 7,
  minPenaltyMs: 1000,
  maxPenaltyMs: 60_000,
  jitterRatio: 0.5,
} as const;

/** The annotation `name` (after the prefix) and which prefix carried it. */
function read(annotations: Readonly<Record<string, string>>, name: string): { key: string; value: string } | undefined {
  for (const prefix of FAILURE_ACCRUAL_PREFIXES) {
    const key = prefix + name;
    const value = annotations[key];
    if (value !== undefined) return { key, value };
  }
  return undefined;
}

/**
 * The failure accrual a Service's annotations ask for (undefined: none), and what was wrong with them
 * (each problem names the annotation, what it expected, and what is used instead).
 */
export function parseFailureAccrualAnnotations(annotations: Readonly<Record<string, string>>): {
  accrual: FailureAccrual | undefined;
  problems: string[];
} {
  const problems: string[] = [];
  const mode = read(annotations, 'failure-accrual');
  if (mode === undefined) return { accrual: undefined, problems };
  if (mode.value.trim() !== 'consecutive') {
    problems.push(`${mode.key}: expected "consecutive", got ${JSON.stringify(mode.value)}; no failure accrual`);
    return { accrual: undefined, problems };
  }
  const d = FAILURE_ACCRUAL_DEFAULTS;
  const bad = (key: string, expected: string, value: string, fallback: string): void => {
    problems.push(`${key}: expected ${expected}, got ${JSON.stringify(value)}; using the default ${fallback}`);
  };

  let maxFailures: number = d.maxFailures;
  const mf = read(annotations, 'failure-accrual-consecutive-max-failures');
  if (mf !== undefined) {
    const t = mf.value.trim();
    if (/^\d+$/.test(t) && Number(t) <= 0xffff_ffff) maxFailures = Number(t);
    else bad(mf.key, 'a whole number of failures (0 or more)', mf.value, String(d.maxFailures));
  }

  const penalty = (name: string, fallback: number): number => {
    const a = read(annotations, name);
    if (a === undefined) return fallback;
    let ms: number | undefined;
    try {
      ms = duration(a.value, a.key);
    } catch {
      ms = undefined;
    }
    if (ms === undefined || ms <= 0) {
      bad(a.key, 'a positive duration such as 500ms, 10s or 1m', a.value, `${fallback}ms`);
      return fallback;
    }
    return ms;
  };
  let minPenaltyMs = penalty('failure-accrual-consecutive-min-penalty', d.minPenaltyMs);
  let maxPenaltyMs = penalty('failure-accrual-consecutive-max-penalty', d.maxPenaltyMs);
  if (minPenaltyMs > maxPenaltyMs) {
    problems.push(
      `failure-accrual-consecutive-min-penalty (${minPenaltyMs}ms) exceeds -max-penalty (${maxPenaltyMs}ms); ` +
        `using the defaults ${d.minPenaltyMs}ms and ${d.maxPenaltyMs}ms`,
    );
    minPenaltyMs = d.minPenaltyMs;
    maxPenaltyMs = d.maxPenaltyMs;
  }

  let jitterRatio: number = d.jitterRatio;
  const j = read(annotations, 'failure-accrual-consecutive-jitter-ratio');
  if (j !== undefined) {
    const t = j.value.trim();
    const n = Number(t);
    // Linkerd's bounds: 0 to 100.
    if (t !== '' && Number.isFinite(n) && n >= 0 && n <= 100) jitterRatio = n;
    else bad(j.key, 'a number from 0 to 100', j.value, String(d.jitterRatio));
  }
  return { accrual: { kind: 'consecutive', maxFailures, minPenaltyMs, maxPenaltyMs, jitterRatio }, problems };
}
