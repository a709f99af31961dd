// Exponential backoff, the one copy: watches that restart, reconcilers that retry, streams that
// reconnect. A delay doubles (by `factor`) from initialMs per consecutive failure up to maxMs; with
// `jitter` j the delay is drawn from [d·(1-j), d], so replicas that failed together do not retry in step.

export interface BackoffOptions {
  /** The first delay. */
  initialMs: number;
  /** The cap. */
  maxMs: number;
  /** Growth per attempt; 2 unless given. */
  factor?: number;
  /** 0 (none, the default) to 1: the share of the delay that is randomised downwards. */
  jitter?: number;
}

/** The delay before retry number `attempt` (0 for the first retry). Pure apart from the jitter's random draw. */
export function backoffDelay(attempt: number, opts: BackoffOptions, random: () => number = Math.random): number {
  const factor = opts.factor ?? 2;
  // Past ~60 doublings the number is Infinity anyway; the cap keeps the exponent small.
  const grown = opts.initialMs * factor ** Math.min(Math.max(0, attempt), 60);
  const capped = Math.min(opts.maxMs, grown);
  const jitter = Math.min(1, Math.max(0, opts.jitter ?? 0));
  return jitter === 0 ? capped : capped * (1 - jitter * random());
}

/** A backoff with its own attempt counter: next() after each failure, reset() after a success. */
export class Backoff {
  private attempt = 0;

  constructor(private readonly opts: BackoffOptions) {}

  /** The delay to wait now; the following call returns a longer one. */
  next(): number {
    return backoffDelay(this.attempt++, this.opts);
  }

  reset(): void {
    this.attempt = 0;
  }

  /** Consecutive failures since the last reset. */
  get failures(): number {
    return this.attempt;
  }
}

/** Resolves after ms, or at once when the signal aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
