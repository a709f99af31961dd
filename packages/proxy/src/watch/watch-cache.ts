// The one cache of watched gRPC server streams, keyed, that discovery (destination Get and GetProfile)
// and both policy clients (inbound ports, outbound targets) sit on, as linkerd2-proxy's idle-cache,
// tonic-watch and exp-backoff do for it:
//   keyed        one stream per key, shared by every caller (get() makes the entry and opens its stream);
//   idle-dropped an entry unused for idleMs is dropped and its stream cancelled (permanent ones stay);
//   reconnecting a stream that fails or ends is opened again after @minimesh/runtime's backoff
//                (doubling from minMs to maxMs, jittered by half), unless the spec calls the failure final.
// Each call's outcome is taken once: grpc-js emits a failed call's error and then ends its stream, and
// reacting to both doubled the streams at every round (2,502 Gets in 1.5 s against a destination refusing
// them, and a proxy OOM-killed when destination hit its per-client stream limit).
// What an entry holds, and what a message does to it, is the spec's: the cache only keeps streams alive.
import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { backoffDelay } from '@minimesh/runtime';

export interface WatchSpec<K, S, M> {
  /** Opens the stream of `key`; undefined: no source (entries keep what make() gave them). A throw is retried. */
  readonly open: ((key: K, state: S) => ClientReadableStream<M>) | undefined;
  /** A message on the stream of `key` (the backoff starts over). */
  message(state: S, msg: M, key: K): void;
  /**
   * The stream failed (a cancel by the cache is never reported). True: open it again after the backoff;
   * false: stop watching (the entry keeps its state until it is dropped).
   */
  failed(key: K, state: S, err: ServiceError): boolean;
  /** The stream could not be opened (it is tried again after the backoff). */
  openFailed?(key: K, err: unknown): void;
  /** The stream ended without an error (it is opened again after the backoff). */
  ended?(key: K, state: S): void;
  /** A new stream is about to be opened after a failure: its first message is a snapshot. */
  reopening?(state: S): void;
  /** The entry was dropped after idleMs without use. */
  dropped?(key: K): void;
}

export interface WatchCacheOptions {
  /** An entry unused this long is dropped (its stream cancelled). */
  idleMs: number;
  /** How often idle entries are looked for. */
  sweepMs: number;
  /** Reconnect backoff bounds. */
  backoff: { minMs: number; maxMs: number };
}

interface Watch<S, M> {
  readonly state: S;
  readonly permanent: boolean;
  lastUsed: number;
  stream: ClientReadableStream<M> | undefined;
  timer: NodeJS.Timeout | undefined;
  /** Failures since the last message (the backoff's exponent). */
  attempt: number;
  closed: boolean;
}

export class WatchCache<K, S, M> {
  private readonly watches = new Map<K, Watch<S, M>>();
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly spec: WatchSpec<K, S, M>,
    private readonly opts: WatchCacheOptions,
  ) {
    this.sweep = setInterval(() => this.dropIdle(), opts.sweepMs);
    this.sweep.unref();
  }

  /** The state of `key`, made with `make` and watched from now when it is new; marks it used. */
  get(key: K, make: () => S, permanent = false): S {
    let w = this.watches.get(key);
    if (w === undefined) {
      w = {
        state: make(),
        permanent,
        lastUsed: Date.now(),
        stream: undefined,
        timer: undefined,
        attempt: 0,
        closed: false,
      };
      this.watches.set(key, w);
      this.open(key, w);
    } else w.lastUsed = Date.now();
    return w.state;
  }

  /** The state of `key` if it is cached (marked used), without making or watching anything. */
  peek(key: K): S | undefined {
    const w = this.watches.get(key);
    if (w === undefined) return undefined;
    w.lastUsed = Date.now();
    return w.state;
  }

  /** Cached entries (open streams, when there is a source). */
  get size(): number {
    return this.watches.size;
  }

  close(): void {
    clearInterval(this.sweep);
    for (const w of this.watches.values()) this.stop(w);
    this.watches.clear();
  }

  private open(key: K, w: Watch<S, M>): void {
    w.timer = undefined;
    if (w.closed || this.spec.open === undefined) return;
    let stream: ClientReadableStream<M>;
    try {
      stream = this.spec.open(key, w.state);
    } catch (err) {
      this.spec.openFailed?.(key, err);
      this.retry(key, w);
      return;
    }
    w.stream = stream;
    let settled = false;
    stream.on('data', (msg: M) => {
      w.attempt = 0;
      this.spec.message(w.state, msg, key);
    });
    stream.on('error', (err: ServiceError) => {
      if (settled || w.closed) return;
      settled = true;
      if (this.spec.failed(key, w.state, err)) this.retry(key, w);
    });
    stream.on('end', () => {
      if (settled || w.closed) return;
      settled = true;
      this.spec.ended?.(key, w.state);
      this.retry(key, w);
    });
  }

  private retry(key: K, w: Watch<S, M>): void {
    if (w.closed) return;
    w.stream = undefined;
    this.spec.reopening?.(w.state);
    const delay = backoffDelay(w.attempt++, {
      initialMs: this.opts.backoff.minMs,
      maxMs: this.opts.backoff.maxMs,
      jitter: 0.5,
    });
    w.timer = setTimeout(() => this.open(key, w), delay);
    w.timer.unref();
  }

  private stop(w: Watch<S, M>): void {
    w.closed = true;
    if (w.timer) clearTimeout(w.timer);
    w.stream?.cancel();
  }

  private dropIdle(): void {
    const now = Date.now();
    for (const [key, w] of this.watches) {
      if (w.permanent || now - w.lastUsed <= this.opts.idleMs) continue;
      this.stop(w);
      this.watches.delete(key);
      this.spec.dropped?.(key);
    }
  }
}
