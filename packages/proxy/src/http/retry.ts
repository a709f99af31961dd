// The retry transport: an exchange sent under a retry policy, through the one forwarder (forward.ts).
// Whether and when to send again is the policy's (RetryPolicy: the route's, policy/retry-policy.ts);
// this file only moves the bytes:
//   body      the first attempt streams the caller's body upstream as it arrives and keeps a copy of up
//             to the policy's maxRequestBytes; a retry replays the copy. Past the limit the copy is
//             dropped (the body is "capped").
//   response  an attempt's response head is held (its body unread) until the decision: a retried
//             response is let go (forward.ts release(): HTTP/1 drained so the connection is reused,
//             HTTP/2 cancelled), the kept one goes to the caller through the forwarder's response half.
//   endpoint  each attempt goes down the stack below the route again (`route`), so it is balanced again
//             and may go to another endpoint (Linkerd's retries sit above its balancer); when none can
//             take it, the held response goes back (retry overflow).
//   timeouts  each attempt may have its own timeout (a retryable outcome); the route's request timeout
//             (HttpExchange) bounds all attempts together.
// Only the first attempt is counted, tapped and load-tracked as the exchange (HttpExchange.forwardVia);
// every attempt reports its own outcome to its endpoint's circuit breaker (failure accrual).
import type { Readable, Writable } from 'node:stream';
import { sleep, type Logger } from '@minimesh/runtime';
import { ProxyError } from '../errors.js';
import type { ExchangeTransport, HttpExchange, HttpRequest } from './exchange.js';
import type { BodySource, CallSink, ExchangeHooks, UpstreamCall } from './forward.js';
import type { Connected, HttpUpstream } from './upstream.js';
import type { Labels } from '../metrics/metrics.js';

/** What an attempt came back with. */
export type AttemptOutcome =
  /** grpcStatus: a trailers-only gRPC response's status (in its head), when it has one. */
  | { kind: 'response'; status: number; grpcStatus?: number | undefined }
  | { kind: 'timeout' }
  | { kind: 'refused' }
  | { kind: 'error' };

/** The request body as the transport has seen it so far. */
export interface BodyState {
  /** The body has ended (a bodiless request has, from the start). */
  complete: boolean;
  /** More than maxRequestBytes went by: the copy was dropped and the body cannot be replayed. */
  capped: boolean;
}

/**
 * After an attempt:
 *   done       the outcome is not retryable: it goes to the caller (a retry's own success when attempt > 1);
 *   unbuffered it is retryable, but the body cannot be replayed: it goes to the caller;
 *   limit      it is retryable and the attempts are used up: it goes to the caller (retry_limit_exceeded);
 *   retry      send the request again after backoffMs(attempt).
 */
export type RetryDecision = 'done' | 'unbuffered' | 'limit' | 'retry';

const NO_EXTRA: Record<string, string> = {};

/** A counter the transport bumps (a metric series handle). */
export interface Count {
  value: number;
}

/** The decisions and counters of one route's retries. */
export interface RetryPolicy {
  /** The most request body bytes kept to replay. */
  readonly maxRequestBytes: number;
  /** `attempt` counts from 1 (the original request). */
  decide(attempt: number, outcome: AttemptOutcome, body: BodyState): RetryDecision;
  /** The wait before retry `n` (from 1). */
  backoffMs(n: number): number;
  /** The timeout of attempt `attempt` (from 1), or undefined for none. */
  attemptTimeoutMs(attempt: number): number | undefined;
  readonly counters: { requests: Count; successes: Count; limitExceeded: Count; overflow: Count };
}

/**
 * One attempt as the stack below the route sees it: balanced and connected like the exchange, but sent
 * by the transport. `forward()` only says where it goes; `reject()` that it can go nowhere.
 */
export class RetryAttempt implements CallSink, HttpRequest {
  readonly upgrade = false;
  /** Where the stack sent it (the first attempt's labels count the exchange). */
  up: HttpUpstream | undefined;
  labels: Labels | undefined;
  extra: Record<string, string> = NO_EXTRA;
  authority = '';
  /** Why no stage could take it. */
  rejected: unknown;
  call: UpstreamCall | undefined;
  outcome: AttemptOutcome | undefined;
  err: Error | undefined;
  private settle: ((outcome: AttemptOutcome, err?: Error) => void) | undefined;

  constructor(
    /** The caller's exchange. */
    readonly exchange: HttpExchange,
    /** 1 for the original request. */
    readonly n: number,
  ) {}

  get protocol(): 'http1' | 'h2' {
    return this.exchange.protocol;
  }

  /** The exchange is tapped once, on its first attempt. */
  get observable(): HttpExchange | undefined {
    return this.n === 1 ? this.exchange : undefined;
  }

  reject(err: unknown): void {
    this.rejected = err;
  }

  fail(err: unknown): void {
    this.rejected = err;
  }

  forward(t: Connected): void {
    this.up = t.upstream as HttpUpstream;
    this.labels = t.labels;
    this.extra = t.extra ?? NO_EXTRA;
    this.authority = t.authority;
  }

  /** Sends it with `body`; resolves once its response head, its failure, or its timeout is known. */
  send(body: BodySource | undefined, timeoutMs: number | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      this.settle = (outcome, err) => {
        this.settle = undefined;
        if (timer) clearTimeout(timer);
        this.outcome = outcome;
        if (err) this.err = err;
        resolve();
      };
      this.call = this.exchange.sendTo(this.up as HttpUpstream, this.extra, this.authority, body, this);
      if (timeoutMs !== undefined && this.settle !== undefined)
        timer = setTimeout(() => {
          this.call?.cancel();
          this.settle?.(
            { kind: 'timeout' },
            new ProxyError(
              'MINIMESH_PROXY_RESPONSE_TIMEOUT',
              `no response within the route's per-try timeout (${timeoutMs} ms)`,
            ),
          );
        }, timeoutMs);
    });
  }

  onHead(call: UpstreamCall): void {
    this.settle?.({ kind: 'response', status: call.status, grpcStatus: call.grpcStatus });
    this.up?.endpoint.load?.breaker?.record(call.status >= 500, performance.now());
  }

  onError(err: Error, call: UpstreamCall | undefined): void {
    this.settle?.({ kind: call?.refused(err) === true ? 'refused' : 'error' }, err);
    this.up?.endpoint.load?.breaker?.record(true, performance.now());
  }
}

/** The caller's request body: streamed to the first attempt, copied for the retries while it fits. */
class RequestBody implements BodyState {
  complete: boolean;
  capped = false;
  private chunks: Buffer[] = [];
  private bytes = 0;
  private live: Writable | undefined;

  constructor(
    private readonly src: Readable,
    readonly hasBody: boolean,
    private readonly max: number,
  ) {
    this.complete = !hasBody;
    // A bodiless request is still read to its end, so the caller's connection can be reused.
    if (!hasBody) src.resume();
  }

  /** The body as the first attempt sends it: streamed through, and copied. */
  readonly first: BodySource = { pipe: (sink: Writable) => this.pipeFirst(sink) };
  /** The body as a retry sends it: the copy. */
  readonly copy: BodySource = { pipe: (sink: Writable) => this.replay(sink) };

  private pipeFirst(sink: Writable): void {
    this.live = sink;
    this.src.on('data', (c: Buffer) => {
      if (!this.capped) {
        this.bytes += c.length;
        if (this.bytes > this.max) {
          this.capped = true;
          this.chunks = [];
        } else this.chunks.push(c);
      }
      const s = this.live;
      if (s !== undefined && !s.destroyed && !s.write(c)) {
        this.src.pause();
        s.once('drain', () => this.src.resume());
      }
    });
    this.src.once('end', () => {
      this.complete = true;
      const s = this.live;
      if (s !== undefined && !s.destroyed) s.end();
    });
  }

  /** The first attempt was given up: the rest of the body goes nowhere (it is still read and counted). */
  detach(): void {
    this.live = undefined;
    if (this.src.isPaused()) this.src.resume();
  }

  private replay(sink: Writable): void {
    for (const c of this.chunks) sink.write(c);
    sink.end();
  }
}

/**
 * Sends `ex` under `policy`. `route(attempt)` takes an attempt down the stack below the route (backend,
 * balance, connect), which ends in attempt.forward() or attempt.reject().
 */
export function sendWithRetries(
  ex: HttpExchange,
  policy: RetryPolicy,
  route: (attempt: RetryAttempt) => void,
  log: Logger,
): void {
  const first = new RetryAttempt(ex, 1);
  route(first);
  if (first.up === undefined || first.labels === undefined) {
    if (first.rejected !== undefined) ex.reject(first.rejected);
    return;
  }
  ex.forwardVia(first.up, first.labels, new RetryRun(ex, policy, route, log, first));
}

class RetryRun implements ExchangeTransport {
  private readonly body: RequestBody;
  private cancelled = false;
  private current: RetryAttempt | undefined;
  private committed: RetryAttempt | undefined;
  private readonly sleeping = new AbortController();

  constructor(
    private readonly ex: HttpExchange,
    private readonly policy: RetryPolicy,
    private readonly route: (attempt: RetryAttempt) => void,
    private readonly log: Logger,
    private readonly first: RetryAttempt,
  ) {
    this.body = new RequestBody(ex.requestStream, ex.hasBody, policy.maxRequestBytes);
  }

  start(hooks: ExchangeHooks): void {
    // The caller went away before an answer: stop retrying.
    this.ex.downstream.once('close', () => {
      if (!this.committed) this.cancel();
    });
    this.loop(hooks).catch((err: unknown) => {
      // A bug in this transport must still answer the caller.
      this.log.warn({ err }, 'outbound retry layer failed');
      if (!this.cancelled && !this.committed) hooks.onError(err as Error);
    });
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.sleeping.abort();
    this.current?.call?.cancel();
    this.committed?.call?.cancel();
  }

  private async loop(hooks: ExchangeHooks): Promise<void> {
    const { policy } = this;
    const { counters } = policy;
    let a = this.first;
    await this.send(a);
    for (;;) {
      if (this.cancelled) return this.discard(a);
      const outcome = a.outcome ?? { kind: 'error' };
      const d = policy.decide(a.n, outcome, this.body);
      if (d === 'done') {
        if (a.n > 1 && outcome.kind === 'response') counters.successes.value++;
        break;
      }
      if (d === 'unbuffered') break;
      if (d === 'limit') {
        counters.limitExceeded.value++;
        break;
      }
      await sleep(policy.backoffMs(a.n), this.sleeping.signal);
      if (this.cancelled) return this.discard(a);
      const next = new RetryAttempt(this.ex, a.n + 1);
      this.route(next);
      if (next.up === undefined) {
        counters.overflow.value++;
        const why = next.rejected instanceof Error ? next.rejected.message : String(next.rejected);
        this.log.debug({ err: why }, 'no endpoint for a retry: returning the last response');
        break;
      }
      this.log.debug(
        { attempt: next.n, status: a.call?.status || undefined, outcome: outcome.kind },
        'retrying an outbound request',
      );
      this.discard(a);
      counters.requests.value++;
      a = next;
      await this.send(a);
    }
    this.commit(a, hooks);
  }

  private async send(a: RetryAttempt): Promise<void> {
    this.current = a;
    // The body: streamed into the first attempt, replayed into a retry (a bodiless request has none).
    const body = !this.body.hasBody ? undefined : a.n === 1 ? this.body.first : this.body.copy;
    await a.send(body, this.policy.attemptTimeoutMs(a.n));
    if (this.current === a) this.current = undefined;
  }

  /** Lets go of an attempt that is not going to the caller. */
  private discard(a: RetryAttempt): void {
    if (a.n === 1) this.body.detach();
    a.call?.release();
  }

  /** The kept attempt goes to the caller: its response as forward() would send it, or its error. */
  private commit(a: RetryAttempt, hooks: ExchangeHooks): void {
    if (this.cancelled) return this.discard(a);
    const call = a.call;
    if (a.outcome?.kind !== 'response' || call === undefined)
      return hooks.onError(a.err ?? new Error('upstream request failed'));
    this.committed = a;
    this.ex.couple(call);
    this.ex.respondFrom(call);
  }
}
