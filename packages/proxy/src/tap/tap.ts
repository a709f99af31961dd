// The tap layer: the requests this proxy forwards, told to the taps that asked for them. Off unless
// asked: with no tap the exchange checks one boolean (`active`) per request and does nothing else.
// Each tap has its match, a limit of requests, and a bounded buffer of events: when its reader falls
// behind, events are dropped (and counted), never queued without bound.
import { randomInt } from 'node:crypto';
import { toTcpAddress, tap } from '@minimesh/proto';
import { compileMatch, type TapMatcher, type TapView } from './match.js';

/** Events a tap may hold for its reader before it drops (Linkerd's tap buffer is bounded too). */
export const DEFAULT_TAP_BUFFER = 1000;

/** What the tap layer needs of a request besides the match view. */
export interface TapRequestMeta {
  direction: 'inbound' | 'outbound';
  /** The peer that sent it: tls ("true" or the reason) and client_id (inbound). */
  sourceLabels: Record<string, string>;
  /** The peer it goes to: destination's labels (outbound), tls and server_id. */
  destinationLabels: Record<string, string>;
  /** Request headers, when a tap asked for them. */
  headers?: () => Array<[string, string]>;
}

/** One Observe call. */
export class ActiveTap {
  readonly match: TapMatcher;
  /** Requests it may still take. */
  remaining: number;
  /** Requests taken whose end it has not seen yet. */
  inFlight = 0;
  dropped = 0;
  closed = false;
  readonly wantsHeaders: boolean;
  private readonly queue: tap.TapEvent[] = [];

  constructor(
    req: tap.ObserveRequest,
    private readonly capacity: number,
    /** Called when events are queued, and once when the tap is complete. */
    private readonly notify: () => void,
  ) {
    this.match = compileMatch(req.match);
    this.remaining = req.limit;
    this.wantsHeaders = req.extract?.extract?.$case === 'http';
  }

  /** Every request it asked for has been taken and has ended. */
  get complete(): boolean {
    return this.remaining === 0 && this.inFlight === 0;
  }

  push(ev: tap.TapEvent): void {
    if (this.closed) return;
    if (this.queue.length >= this.capacity) this.dropped++;
    else this.queue.push(ev);
    this.notify();
  }

  /** Takes the queued events (the reader writes them out). */
  drain(): tap.TapEvent[] {
    return this.queue.splice(0, this.queue.length);
  }

  get queued(): number {
    return this.queue.length;
  }

  ended(): void {
    this.inFlight--;
    if (this.complete) this.notify();
  }
}

function duration(ns: bigint): { seconds: bigint; nanos: number } {
  return { seconds: ns / 1_000_000_000n, nanos: Number(ns % 1_000_000_000n) };
}

function headersOf(
  pairs: Array<[string, string]> | undefined,
): { headers: Array<{ name: string; value: Buffer }> } | undefined {
  if (!pairs) return undefined;
  return { headers: pairs.map(([name, value]) => ({ name, value: Buffer.from(value) })) };
}

/** One tapped request: its three events, sent to the taps that took it. */
export class TappedRequest {
  private readonly t0 = process.hrtime.bigint();
  private tResponse = 0n;
  private done = false;
  /** Response body bytes written downstream (counted only for tapped requests). */
  bytes = 0;

  constructor(
    private readonly taps: ActiveTap[],
    private readonly id: tap.TapEvent_Http_StreamId,
    private readonly base: Omit<tap.TapEvent, 'event'>,
  ) {}

  private emit(http: tap.TapEvent_Http['event']): void {
    const ev: tap.TapEvent = { ...this.base, event: { $case: 'http', value: { event: http } } };
    for (const t of this.taps) t.push(ev);
  }

  requestInit(view: TapView, headers: Array<[string, string]> | undefined): void {
    const method = view.method;
    const i = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'CONNECT', 'HEAD', 'TRACE'].indexOf(method);
    this.emit({
      $case: 'requestInit',
      value: {
        id: this.id,
        method:
          i >= 0 ? { type: { $case: 'registered', value: i } } : { type: { $case: 'unregistered', value: method } },
        scheme: { type: { $case: 'registered', value: view.scheme === 'https' ? 1 : 0 } },
        authority: view.authority,
        path: view.path,
        ...(headers ? { headers: headersOf(headers) } : {}),
      },
    });
  }

  responseInit(status: number): void {
    if (this.done) return;
    this.tResponse = process.hrtime.bigint();
    this.emit({
      $case: 'responseInit',
      value: { id: this.id, sinceRequestInit: duration(this.tResponse - this.t0), httpStatus: status },
    });
  }

  /** The response is over: its gRPC status, or an error (a reset) when it failed. */
  responseEnd(opts: { grpcStatus?: number | undefined; failed?: boolean }): void {
    if (this.done) return;
    this.done = true;
    const now = process.hrtime.bigint();
    const eos: tap.Eos | undefined =
      opts.grpcStatus !== undefined
        ? { end: { $case: 'grpcStatusCode', value: opts.grpcStatus } }
        : opts.failed
          ? { end: { $case: 'resetErrorCode', value: 2 } } // INTERNAL_ERROR
          : undefined;
    this.emit({
      $case: 'responseEnd',
      value: {
        id: this.id,
        sinceRequestInit: duration(now - this.t0),
        sinceResponseInit: duration(this.tResponse ? now - this.tResponse : 0n),
        responseBytes: BigInt(this.bytes),
        ...(eos ? { eos } : {}),
      },
    });
    for (const t of this.taps) t.ended();
  }
}

export class TapLayer {
  /** The one thing the hot path reads: false while nobody taps. */
  active = false;
  private readonly taps = new Set<ActiveTap>();
  /** Linkerd's StreamId: a random base for this process, and a counter. */
  readonly base = randomInt(0, 2 ** 32 - 1);
  private stream = 0n;

  constructor(readonly capacity = DEFAULT_TAP_BUFFER) {}

  /** A new Observe call. Throws TapMatchError for a match it cannot compile. */
  register(req: tap.ObserveRequest, notify: () => void): ActiveTap {
    const t = new ActiveTap(req, this.capacity, notify);
    if (t.remaining > 0) {
      this.taps.add(t);
      this.active = true;
    }
    return t;
  }

  unregister(t: ActiveTap): void {
    t.closed = true;
    this.taps.delete(t);
    this.active = this.taps.size > 0;
  }

  get count(): number {
    return this.taps.size;
  }

  /** Called for a request about to be forwarded, only when `active`: the taps that take it, if any. */
  start(view: TapView, meta: TapRequestMeta): TappedRequest | undefined {
    let taken: ActiveTap[] | undefined;
    for (const t of this.taps) {
      if (t.remaining === 0 || !t.match(view)) continue;
      t.remaining--;
      t.inFlight++;
      (taken ??= []).push(t);
      // A tap that took its last request stops matching; it completes when that request ends.
      if (t.remaining === 0) this.taps.delete(t);
    }
    this.active = this.taps.size > 0;
    if (!taken) return undefined;
    const req = new TappedRequest(
      taken,
      { base: this.base, stream: this.stream++ },
      {
        source: toTcpAddress(view.source.ip, view.source.port),
        sourceMeta: { labels: meta.sourceLabels },
        destination: toTcpAddress(view.destination.ip, view.destination.port),
        destinationMeta: { labels: meta.destinationLabels },
        proxyDirection:
          meta.direction === 'inbound' ? tap.TapEvent_ProxyDirection.INBOUND : tap.TapEvent_ProxyDirection.OUTBOUND,
      },
    );
    req.requestInit(view, taken.some((t) => t.wantsHeaders) ? meta.headers?.() : undefined);
    return req;
  }
}
