/** How many of an open loop's `total` requests at `rps` are due `elapsedMs` after its start. */
export function dueCount(elapsedMs: number, rps: number, total: number): number;
/** When request `i` of an open loop at `rps` is due, in ms after its start. */
export function scheduledAt(i: number, rps: number): number;
