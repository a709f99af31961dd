// When to renew: at 70 % of the remaining lifetime, clamped to [10 s, 24 h]; errors back off.
export const MIN_REFRESH_MS = 10_000;
export const MAX_REFRESH_MS = 24 * 3600_000;

export function refreshDelay(now: number, notAfter: number, opts: { minMs?: number; maxMs?: number } = {}): number {
  const min = opts.minMs ?? MIN_REFRESH_MS;
  const max = opts.maxMs ?? MAX_REFRESH_MS;
  const remaining = Math.max(0, notAfter - now);
  return Math.min(max, Math.max(min, Math.floor(remaining * 0.7)));
}

/** Exponential backoff after failed attempts: 1 s, 2 s, 4 s ... capped (and never past expiry's need). */
export function errorBackoff(attempt: number, opts: { baseMs?: number; maxMs?: number } = {}): number {
  const base = opts.baseMs ?? 1000;
  const max = opts.maxMs ?? 30_000;
  return Math.min(max, base * 2 ** Math.min(attempt, 20));
}
