// Power of two choices over peak-EWMA latency weighted by in-flight requests (tower's peak_ewma):
// pick two endpoints at random, send to the one whose estimated cost (rtt × (pending + 1)) is lower.
// The RTT estimate jumps up at once on a slow response (the "peak") and decays back with time.
import type { ConsecutiveFailures } from './consecutive-failures.js';

export interface PeakEwmaOptions {
  /** Decay time constant in ms (Linkerd: 10 s). */
  decayMs: number;
  /** Estimate for an endpoint that has not answered yet, ms (Linkerd: 30 ms). */
  defaultRttMs: number;
  now?: () => number;
}

export const DEFAULT_PEAK_EWMA: PeakEwmaOptions = { decayMs: 10_000, defaultRttMs: 30 };

/** Per-endpoint load estimate. */
export class PeakEwma {
  private rtt: number;
  private stamp: number;
  pending = 0;
  /**
   * False while the endpoint's connection is broken (reset, refused, closed by the peer) and no
   * reconnect has succeeded yet: the balancer leaves it out while another endpoint is ready, as
   * Linkerd's balancer only dispatches to ready endpoints (balance/endpoint-health.ts reconnects in the background).
   */
  ready = true;
  /** A background reconnect is scheduled (balance/endpoint-health.ts). */
  reconnecting = false;
  /** Failed connections in a row, for the reconnect backoff. */
  failures = 0;
  /** Not ready again before this time (epoch ms), however soon a reconnect works (balance/endpoint-health.ts). */
  ejectedUntil = 0;
  /** The endpoint's circuit breaker, when its Service has failure accrual (balance/failure-accrual.ts). */
  breaker: ConsecutiveFailures | undefined = undefined;
  private readonly now: () => number;

  constructor(private readonly opts: PeakEwmaOptions) {
    this.now = opts.now ?? (() => performance.now());
    this.rtt = opts.defaultRttMs;
    this.stamp = this.now();
  }

  /** The current RTT estimate, decayed toward nothing since the last observation. */
  private decayed(at: number): number {
    const elapsed = Math.max(0, at - this.stamp);
    return this.rtt * Math.exp(-elapsed / this.opts.decayMs);
  }

  /** Cost used to compare endpoints. */
  cost(): number {
    const at = this.now();
    return this.decayed(at) * (this.pending + 1);
  }

  /** Marks a request as started; returns its start time, to pass to end() once (no closure per request). */
  start(): number {
    this.pending++;
    return this.now();
  }

  /**
   * Marks a request started at `t0` as answered (its head arrived, or it failed); `failed` (a 5xx or
   * gRPC error head, a connection error, a timeout) goes to the circuit breaker, if any; undefined:
   * not classified here (an opaque connection; a retried exchange, whose attempts report their own,
   * http/retry.ts).
   */
  end(t0: number, failed?: boolean): void {
    this.pending--;
    const now = this.now();
    this.observe(now - t0);
    if (failed !== undefined) this.breaker?.record(failed, now);
  }

  observe(rttMs: number): void {
    const at = this.now();
    const est = this.decayed(at);
    if (rttMs > est) {
      this.rtt = rttMs; // peak: jump up at once
    } else {
      const elapsed = Math.max(0, at - this.stamp);
      const w = Math.exp(-elapsed / this.opts.decayMs);
      this.rtt = est * w + rttMs * (1 - w);
    }
    this.stamp = at;
  }
}

export interface Balanced {
  /** Undefined counts as no load. */
  readonly load: PeakEwma | undefined;
}

const LOAD_READY = (e: Balanced): boolean => e.load?.ready !== false;

/**
 * Picks an endpoint with P2C among the ready ones (all of them when none is ready). `random` is
 * injectable for tests; `ready` is endpoint health's verdict (balance/endpoint-health.ts).
 */
export function pickP2c<T extends Balanced>(
  all: readonly T[],
  random: () => number = Math.random,
  ready: (e: T) => boolean = LOAD_READY,
): T | undefined {
  let endpoints = all;
  for (const e of all) {
    if (!ready(e)) {
      const readyOnes = all.filter(ready);
      if (readyOnes.length > 0) endpoints = readyOnes;
      break;
    }
  }
  const n = endpoints.length;
  if (n === 0) return undefined;
  if (n === 1) return endpoints[0];
  const i = Math.floor(random() * n);
  let j = Math.floor(random() * (n - 1));
  if (j >= i) j++;
  const a = endpoints[i] as T;
  const b = endpoints[j] as T;
  return (a.load?.cost() ?? 0) <= (b.load?.cost() ?? 0) ? a : b;
}
