// A Server's HTTP local rate limit, as linkerd2-proxy enforces an HttpLocalRateLimit (its
// local_rate_limit.rs over the governor crate): token buckets that hold `rps` tokens and refill at
// `rps` per second (a quota of rps per second with a burst of rps). A request takes a token from the
// total bucket first, then from its override's bucket if its identity has one (the override replaces
// the per-identity limit), else from its identity's bucket (clients without an identity share one).
// A request refused by a later bucket has still used its total token, as in linkerd2-proxy. Pure: the
// clock is passed in.
import type { CompiledRateLimit, PolicyMeta } from '@minimesh/policy/client';

/** A refused request: which limit (Linkerd's metric scope) and when a token is back. */
export interface RateLimited {
  scope: 'total' | 'identity';
  /** "total rate limit exceeded: 50rps", as linkerd2-proxy words it. */
  message: string;
  retryAfterMs: number;
}

class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    readonly rps: number,
    now: number,
  ) {
    this.tokens = rps;
    this.at = now;
  }

  /** Takes a token; else how long until one is back (ms). */
  take(now: number): number {
    if (now > this.at) {
      this.tokens = Math.min(this.rps, this.tokens + ((now - this.at) * this.rps) / 1000);
      this.at = now;
    }
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return ((1 - this.tokens) * 1000) / this.rps;
  }
}

export class LocalRateLimit {
  readonly meta: PolicyMeta;
  private readonly total: TokenBucket | undefined;
  private readonly perIdentity = new Map<string, TokenBucket>();
  private readonly overrides = new Map<{ requestsPerSecond: number }, TokenBucket>();

  constructor(
    private readonly limit: CompiledRateLimit,
    now: number,
  ) {
    this.meta = limit.meta;
    this.total = limit.total ? new TokenBucket(limit.total, now) : undefined;
    for (const o of new Set(limit.overrides.values())) this.overrides.set(o, new TokenBucket(o.requestsPerSecond, now));
  }

  /** Admits a request from `identity` (undefined: no mesh identity) at `now`, or says why not. */
  check(identity: string | undefined, now: number): RateLimited | undefined {
    if (this.total) {
      const wait = this.total.take(now);
      if (wait > 0) return refused('total', 'total', this.total.rps, wait);
    }
    if (identity !== undefined) {
      const o = this.limit.overrides.get(identity);
      const bucket = o && this.overrides.get(o);
      if (bucket) {
        const wait = bucket.take(now);
        return wait > 0 ? refused('identity', 'override', bucket.rps, wait) : undefined;
      }
    }
    const rps = this.limit.identity;
    if (rps === undefined) return undefined;
    const key = identity ?? '';
    let bucket = this.perIdentity.get(key);
    if (bucket === undefined) this.perIdentity.set(key, (bucket = new TokenBucket(rps, now)));
    const wait = bucket.take(now);
    return wait > 0 ? refused('identity', 'per-identity', rps, wait) : undefined;
  }
}

function refused(scope: RateLimited['scope'], what: string, rps: number, retryAfterMs: number): RateLimited {
  return { scope, message: `${what} rate limit exceeded: ${rps}rps`, retryAfterMs };
}
