// The open loop's schedule (loadgen.mjs): request i of a loop at `rps` is due i / rps seconds after its
// start, and its latency is measured from then, so a late send counts against what is measured (no
// coordinated omission). Its own module so that the arithmetic is tested (e2e/test/bench-schedule.test.ts).

/**
 * How many of the loop's `total` requests are due `elapsedMs` after its start: requests 0 to
 * floor(elapsedMs * rps / 1000), so request 0 at once. (Until 2026-11-30 the count was the floor alone,
 * which held every request one interval past its time, 1 ms at 1,000 rps, in every latency measured.)
 * @param {number} elapsedMs
 * @param {number} rps
 * @param {number} total
 * @returns {number}
 */
export function dueCount(elapsedMs, rps, total) {
  if (elapsedMs < 0) return 0;
  return Math.min(total, Math.floor((elapsedMs * rps) / 1000) + 1);
}

/**
 * When request `i` is due, in ms after the loop's start.
 * @param {number} i
 * @param {number} rps
 * @returns {number}
 */
export function scheduledAt(i, rps) {
  return (i * 1000) / rps;
}
