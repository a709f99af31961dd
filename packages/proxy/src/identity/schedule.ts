// When to renew: at 70 % of the remaining lifetime, clamped to [10 s, 24 h]. (Errors back off with
// @minimesh/runtime's backoff: 1 s doubling to 30 s.)
export const MIN_REFRESH_MS = 10_000;
export const MAX_REFRESH_MS = 24 * 3600_000;

export function refreshDelay(now: number, notAfter: number, opts: { minMs?: number; maxMs?: number } = {}): number {
  const min = opts.minMs ?? MIN_REFRESH_MS;
  const max = opts.maxMs ?? MAX_REFRESH_MS;
  const remaining = Math.max(0, notAfter - now);
  return Math.min(max, Math.max(min, Math.floor(remaining * 0.7)));
}
