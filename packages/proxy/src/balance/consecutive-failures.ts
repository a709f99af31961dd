// One endpoint's circuit breaker, as linkerd2-proxy's ConsecutiveFailures (its failure accrual):
//   admitting  — every response counts; `maxFailures` failures in a row eject the endpoint;
//   ejected    — left out of balancing for a penalty (wait 1 of the exponential backoff: min, doubling
//                to max, plus jitter); responses of requests still in flight are ignored;
//   probation  — the penalty is over: one request may go (the probe). Success → admitting again (the
//                backoff starts over); failure → ejected for the next, longer penalty.
// Pure: the clock is passed in, the random source injected. The balancer (balance/failure-accrual.ts)
// asks available() when it picks, tells picked() what it chose; the exchange reports each outcome.
import type { CompiledFailureAccrual } from '@minimesh/policy/client';
import { exponentialBackoffMs } from '../policy/retry-policy.js';

export type BreakerState = 'admitting' | 'ejected' | 'probation';

/** What a recorded outcome changed. */
export type BreakerChange = 'ejected' | 'restored' | undefined;

export class ConsecutiveFailures {
  private state: BreakerState = 'admitting';
  private failures = 0;
  /** Penalties served since the endpoint last answered well (the backoff's iteration). */
  private penalties = 0;
  private until = 0;
  /** When the probe went; -1: no probe in flight. */
  private probeAt = -1;

  constructor(
    public config: CompiledFailureAccrual,
    private readonly random: () => number = Math.random,
    /** Told of each ejection and restoration (logs, metrics). */
    private readonly onChange:
      ((change: 'ejected' | 'restored', b: ConsecutiveFailures) => void) | undefined = undefined,
  ) {}

  /** The state at `now` (an ejection whose penalty is over is in probation). */
  stateAt(now: number): BreakerState {
    if (this.state === 'ejected' && now >= this.until) {
      this.state = 'probation';
      this.probeAt = -1;
    }
    return this.state;
  }

  /** Whether the balancer may send to the endpoint now: admitting, or in probation with no probe out. */
  available(now: number): boolean {
    const s = this.stateAt(now);
    if (s === 'admitting') return true;
    if (s === 'ejected') return false;
    // A probe that never answered (its request was cancelled before it went) does not hold the
    // endpoint out for ever: after a max penalty another request may probe.
    if (this.probeAt >= 0 && now - this.probeAt > this.config.maxMs) this.probeAt = -1;
    return this.probeAt < 0;
  }

  /** The balancer sent a request to the endpoint: in probation, it is the probe. */
  picked(now: number): void {
    if (this.state === 'probation' && this.probeAt < 0) this.probeAt = now;
  }

  /** When an ejected endpoint may be probed (0 when it is not ejected). */
  get ejectedUntil(): number {
    return this.state === 'ejected' ? this.until : 0;
  }

  /** An outcome of a request to the endpoint: a failure (5xx, connection error, timeout) or not. */
  record(failed: boolean, now: number): BreakerChange {
    switch (this.stateAt(now)) {
      case 'admitting':
        if (!failed) {
          this.failures = 0;
          return undefined;
        }
        if (++this.failures < this.config.maxFailures) return undefined;
        return this.eject(now);
      case 'ejected':
        return undefined;
      case 'probation':
        if (this.probeAt < 0) return undefined;
        if (failed) return this.eject(now);
        this.state = 'admitting';
        this.failures = 0;
        this.penalties = 0;
        this.probeAt = -1;
        this.onChange?.('restored', this);
        return 'restored';
    }
  }

  /** The penalty the endpoint serves now (ms), when ejected. */
  get penaltyMs(): number {
    return this.state === 'ejected' ? this.until - this.ejectedAt : 0;
  }

  private ejectedAt = 0;

  private eject(now: number): 'ejected' {
    this.state = 'ejected';
    this.failures = 0;
    this.probeAt = -1;
    const { minMs, maxMs, jitter } = this.config;
    this.ejectedAt = now;
    this.until = now + exponentialBackoffMs({ minMs, maxMs, jitter }, ++this.penalties, this.random);
    this.onChange?.('ejected', this);
    return 'ejected';
  }
}
