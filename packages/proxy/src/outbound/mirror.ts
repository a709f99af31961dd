// A mirrored copy of a request (the Gateway API's RequestMirror filter): the route stage sends it down
// the rest of the chain to the mirror's backend (backend → balance → connect → forward), like any
// request, but nobody waits for it: its response is let go as soon as its head comes, its failures are
// only logged, and it never delays, changes or fails the original. Only a request without a body is
// copied (the original's body streams to its own backend as it arrives; holding a copy of it would
// delay nothing but costs memory per request): a request with a body is not mirrored.
import type { Logger } from '@minimesh/runtime';
import type { HttpExchange, HttpRequest } from '../http/exchange.js';
import type { CallSink, UpstreamCall } from '../http/forward.js';
import type { Connected, HttpUpstream } from '../http/upstream.js';

/** How long a mirrored copy may wait for its response head before it is cancelled. */
export const MIRROR_TIMEOUT_MS = 10_000;

export class MirrorRequest implements HttpRequest, CallSink {
  readonly upgrade = false;
  readonly observable = undefined;
  /** Not the caller's exchange: nothing below the route answers or edits the original through it. */
  readonly exchange = undefined;
  private call: UpstreamCall | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly of: HttpExchange,
    private readonly log: Logger,
  ) {}

  get protocol(): 'http1' | 'h2' {
    return this.of.protocol;
  }

  reject(err: unknown): void {
    this.log.debug({ err: (err as Error)?.message ?? String(err) }, 'mirrored request not sent');
  }

  fail(err: unknown): void {
    this.reject(err);
  }

  forward(t: Connected): void {
    const call = this.of.sendTo(t.upstream as HttpUpstream, t.extra ?? {}, t.authority, undefined, this);
    if (call === undefined) return;
    this.call = call;
    this.timer = setTimeout(() => this.call?.cancel(), MIRROR_TIMEOUT_MS);
    this.timer.unref();
  }

  onHead(call: UpstreamCall): void {
    if (this.timer) clearTimeout(this.timer);
    call.release();
  }

  onError(err: Error): void {
    if (this.timer) clearTimeout(this.timer);
    this.log.debug({ err: err.message }, 'mirrored request failed');
  }
}
