// Client-side flow control, as client-go's token bucket (Linkerd's -kube-apiclient-qps/-burst): up to
// `burst` requests at once, refilled at `qps` per second. A request that finds the bucket empty takes
// a token on credit and waits until it would have been refilled, so waiters are served in order.

export interface RateLimit {
  /** Requests per second on average; 0 or less turns the limit off. */
  qps: number;
  /** Requests allowed at once after a quiet spell. */
  burst: number;
}

export class TokenBucket {
  private tokens: number;
  private last: number;
  /** Total milliseconds requests spent waiting for a token. */
  waitedMs = 0;
  /** Requests that had to wait. */
  delayed = 0;

  constructor(
    private readonly limit: RateLimit,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = Math.max(1, limit.burst);
    this.last = now();
  }

  get enabled(): boolean {
    return this.limit.qps > 0;
  }

  /** Milliseconds to wait before the request may go (0 when a token was free); the token is taken. */
  reserve(): number {
    if (!this.enabled) return 0;
    const t = this.now();
    const burst = Math.max(1, this.limit.burst);
    this.tokens = Math.min(burst, this.tokens + ((t - this.last) * this.limit.qps) / 1000);
    this.last = t;
    this.tokens -= 1;
    if (this.tokens >= 0) return 0;
    const wait = (-this.tokens * 1000) / this.limit.qps;
    this.waitedMs += wait;
    this.delayed++;
    return wait;
  }

  /** Resolves when the request may go. */
  take(): Promise<void> | undefined {
    const wait = this.reserve();
    if (wait <= 0) return undefined;
    return new Promise((resolve) => setTimeout(resolve, Math.ceil(wait)));
  }
}
