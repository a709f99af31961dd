// The one forwarder: moving an HTTP exchange from a downstream (an HTTP/1 req/res or an HTTP/2 stream) to
// an upstream (an HTTP/1 keep-alive pool or a multiplexed HTTP/2 session), in two halves:
//   request half   sendH1 / sendH2 send the request (headers already converted for the upstream, see
//                  headers.ts) and hand the upstream's answer, an UpstreamCall, to a sink;
//   response half  writeResponseH1 / writeResponseH2 write a call's response to the caller, in the
//                  caller's protocol (trailers intact), and report it to the exchange's hooks.
// A plain exchange (exchange.ts) joins the halves at once; the retry transport (retry.ts) holds a call's
// response head between them until its policy decides. Errors before the response head go to the sink
// (the caller answers in the caller's protocol); errors after it abort the downstream.
import type { OutgoingHttpHeaders } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import { constants as h2c, type IncomingHttpHeaders as H2Headers } from 'node:http2';
import { isStaleKeepAlive } from '@minimesh/runtime';
import { cleanTrailers, h1ToH1Response, h1ToH2Response, h2ToH1Response, h2ToH2Response } from './headers.js';
import { H2_REQUEST } from './h2-pool.js';
import type { H1Connection, H1Response, ResponseSink } from './h1-client.js';
import type { H1Endpoint } from './h1-pool.js';
import type { H1Answer, H1Incoming } from './h1-wire.js';
import type { CallerStream, UpstreamSession, UpstreamStream } from './h2-engine.js';

export interface ExchangeHooks {
  /** The response head is known (before any body byte is sent downstream). */
  onResponse(status: number, grpcStatus: number | undefined): void;
  /** The exchange finished (failed = a stream error after the head). */
  onEnd(failed: boolean): void;
  /** Failure before the response head (the raw upstream error): the caller writes the error response. */
  onError(err: Error): void;
  /** The response broke after its head: the exchange ends failed and the caller's side is broken off. */
  onBroken(err: Error): void;
  /** Edits the response head before it is written (a route's response header filters); usually unset. */
  readonly editResponse?: ((headers: OutgoingHttpHeaders) => void) | undefined;
}

/** Where a call's answer goes: the exchange (written at once) or a retry attempt (held). */
export interface CallSink {
  /** The response head came (the body is not read until the response half pipes it). */
  onHead(call: UpstreamCall): void;
  /** The call failed before its response head; `call` is undefined when it could not even start. */
  onError(err: Error, call: UpstreamCall | undefined): void;
}

/** A request body to send: the caller's request stream, or a retry's copy of it. */
export interface BodySource {
  pipe(destination: Writable): unknown;
}

/** The grpc-status of a response head (HTTP/2 headers or trailers-only). */
export function grpcStatusOf(h: H2Headers | undefined): number | undefined {
  const v = h?.['grpc-status'];
  return v === undefined ? undefined : Number(v);
}

const NO_BODY = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/** An HTTP/1 request that carries no body (a bodiless method without Content-Length or Transfer-Encoding). */
export function hasNoBody(req: H1Incoming): boolean {
  return (
    NO_BODY.has(req.method ?? 'GET') &&
    req.headers['content-length'] === undefined &&
    req.headers['transfer-encoding'] === undefined
  );
}

/** One request sent upstream, and its response once it came. */
export abstract class UpstreamCall {
  abstract readonly kind: 'h1' | 'h2';
  /** The response head came. */
  answered = false;
  /** The exchange is over for this call (ended, failed, or its late failure reported). */
  finished = false;
  status = 0;
  grpcStatus: number | undefined;
  /**
   * The exchange the response half writes the response for (it is told how the body ends). A reference
   * to the exchange, not a closure over the caller's response: closures over a response kept on a call
   * made V8 promote each request's objects (4x the GC time in an A/B of the outbound path).
   */
  respondedTo: ExchangeHooks | undefined;

  /** Ends the upstream side (a route's timeout, the caller went away); a no-op once it has ended. */
  abstract cancel(): void;
  /** Lets go of a response nobody will read (a retried attempt): its connection stays usable where it can. */
  abstract release(): void;
  /** The peer refused the stream (HTTP/2 REFUSED_STREAM): it did not process the request. */
  abstract refused(err: Error): boolean;

  /** A failure of the call: the sink's before the head, the exchange's after it. */
  protected fail(err: Error): void {
    this.finished = true;
    if (!this.answered) this.sink.onError(err, this);
    else this.respondedTo?.onBroken(err);
  }

  /** The response body ended: the exchange is over (a listener, made once per call). */
  readonly bodyEnded = (): void => {
    if (this.finished) return;
    this.finished = true;
    this.respondedTo?.onEnd(false);
  };

  /** The response body broke after the head. */
  readonly bodyBroke = (err: Error): void => {
    if (this.finished) return;
    this.finished = true;
    this.respondedTo?.onBroken(err);
  };

  protected abstract readonly sink: CallSink;
}

/** How many times a bodiless request goes again after a kept-alive app connection turned out closed. */
const MAX_STALE_RETRIES = 3;

/** A request on an HTTP/1 keep-alive pool (h1-pool.ts), on one of its connections (h1-client.ts). */
export class H1Call extends UpstreamCall implements ResponseSink {
  readonly kind = 'h1';
  conn: H1Connection;
  res: H1Response | undefined;
  /** Where the request's body goes; undefined for a request without one. */
  readonly body: Writable | undefined;
  private retries = 0;
  private cancelled = false;

  /** Throws, sending nothing, when the request head would not be valid HTTP/1 (h1-client.ts). */
  constructor(
    private readonly endpoint: H1Endpoint,
    private readonly method: string,
    private readonly path: string,
    private readonly headers: OutgoingHttpHeaders,
    private readonly bodiless: boolean,
    protected readonly sink: CallSink,
  ) {
    super();
    this.conn = endpoint.acquire();
    try {
      this.body = this.conn.send(method, path, headers, bodiless, this);
    } catch (err) {
      // Nothing was written: the connection is as it was (a new one is closed, an idle one freed).
      this.conn.abort();
      throw err;
    }
  }

  onResponse(res: H1Response): void {
    this.res = res;
    this.status = res.statusCode;
    this.answered = true;
    this.sink.onHead(this);
  }

  /**
   * The keep-alive race (isStaleKeepAlive, @minimesh/runtime): an app that closes an idle connection (a
   * graceful shutdown, its keep-alive timeout) just as the proxy picks it from the pool fails the request
   * before any response byte. A request without a body loses nothing by going again on another
   * connection (whichever the pool gives: a new one if none is idle); one with a body was consumed and
   * never goes twice. Checked on failure only: the hot path allocates nothing for it.
   */
  onFailure(err: NodeJS.ErrnoException): void {
    if (this.finished) return;
    if (
      this.bodiless &&
      !this.answered &&
      !this.cancelled &&
      isStaleKeepAlive(this.conn, err) &&
      this.retries++ < MAX_STALE_RETRIES
    ) {
      this.conn = this.endpoint.acquire();
      this.conn.send(this.method, this.path, this.headers, true, this);
      return;
    }
    this.fail(err);
  }

  cancel(): void {
    // Marked before the close: its ECONNRESET on a reused connection is not the keep-alive race (no retry).
    this.cancelled = true;
    this.conn.abort();
  }

  release(): void {
    // Read to its end, so the connection goes back to the pool.
    if (this.res) this.res.resume();
    else this.cancel();
  }

  refused(): boolean {
    return false;
  }
}

/** A stream on a multiplexed HTTP/2 session. */
export class H2Call extends UpstreamCall {
  readonly kind = 'h2';
  head: H2Headers | undefined;
  /** The head carried END_STREAM: there is no body. */
  endStream = false;
  trailers: H2Headers | undefined;

  constructor(
    readonly stream: UpstreamStream,
    protected readonly sink: CallSink,
  ) {
    super();
    stream.on('response', (h, flags) => {
      this.head = h;
      this.status = Number(h[':status'] ?? 200);
      this.grpcStatus = grpcStatusOf(h);
      this.endStream = ((flags ?? 0) & h2c.NGHTTP2_FLAG_END_STREAM) !== 0;
      this.answered = true;
      sink.onHead(this);
    });
    stream.on('trailers', (t) => {
      this.trailers = t;
    });
    stream.on('error', (err) => {
      if (!this.finished) this.fail(err);
    });
  }

  cancel(): void {
    const s = this.stream;
    if (!s.destroyed && !s.closed) s.close(h2c.NGHTTP2_CANCEL);
  }

  release(): void {
    this.cancel();
  }

  refused(err: Error): boolean {
    return this.stream.rstCode === h2c.NGHTTP2_REFUSED_STREAM || /REFUSED_STREAM/.test(err.message);
  }
}

/** Request half, HTTP/1 upstream. `body` undefined: the request has none (and may go again, see H1Call). */
export function sendH1(
  endpoint: H1Endpoint,
  method: string | undefined,
  path: string | undefined,
  headers: OutgoingHttpHeaders,
  body: BodySource | undefined,
  sink: CallSink,
): H1Call {
  const call = new H1Call(endpoint, method ?? 'GET', path ?? '/', headers, body === undefined, sink);
  // With a body the connection gave the call a stream for it (h1-client.ts).
  if (body !== undefined) body.pipe(call.body as Writable);
  return call;
}

/** Request half, HTTP/2 upstream (between meshed proxies, or an HTTP/2 app). Undefined: it could not start. */
export function sendH2(
  session: UpstreamSession,
  headers: OutgoingHttpHeaders,
  body: BodySource | undefined,
  sink: CallSink,
): H2Call | undefined {
  let stream: UpstreamStream;
  try {
    stream = session.request(headers, body === undefined ? H2_REQUEST.end : H2_REQUEST.body);
  } catch (err) {
    sink.onError(err as Error, undefined);
    return undefined;
  }
  const call = new H2Call(stream, sink);
  if (body !== undefined) body.pipe(stream);
  return call;
}

/**
 * Copies a response body into an HTTP/2 server stream, ending the stream only once its last write has
 * completed. With pipe(), end() follows the last write at once, the stream closes (and is destroyed)
 * while that write is still in flight, and Node then builds an ERR_STREAM_DESTROYED (a stack trace
 * and all) for every response when the write completes: about 8 % of the inbound proxy's CPU.
 */
export function copyBodyToH2(src: Readable, dst: CallerStream): void {
  let inflight = 0;
  let ended = false;
  const written = () => {
    if (--inflight === 0) {
      if (ended) dst.end();
      else src.resume();
    }
  };
  src.on('data', (chunk: Buffer) => {
    if (dst.destroyed) return;
    inflight++;
    if (!dst.write(chunk, written)) src.pause();
  });
  src.once('end', () => {
    ended = true;
    if (inflight === 0 && !dst.destroyed) dst.end();
  });
}

/**
 * Copies a response body to an HTTP/1 caller, with backpressure: what pipe() did here, without the
 * listeners pipe() puts on both streams (data, end, drain, error, close, finish, unpipe) and takes off
 * again for every response. A caller that went away ends the exchange (its `close` cancels the call),
 * so what still arrives is dropped instead of written to a destroyed response.
 */
export function copyBodyToH1(src: Readable, dst: H1Answer): void {
  const resume = () => src.resume();
  src.on('data', (chunk: Buffer) => {
    if (dst.destroyed) return;
    if (!dst.write(chunk)) {
      src.pause();
      dst.once('drain', resume);
    }
  });
  src.once('end', () => {
    if (!dst.destroyed) dst.end();
  });
}

/** Response half, to an HTTP/1 caller. */
export function writeResponseH1(res: H1Answer, call: UpstreamCall, hooks: ExchangeHooks): void {
  call.respondedTo = hooks;
  let status: number;
  let headers: OutgoingHttpHeaders;
  let body: Readable;
  if (call instanceof H1Call) {
    const ur = call.res as H1Response;
    status = call.status;
    hooks.onResponse(status, undefined);
    headers = h1ToH1Response(ur.headers);
    hooks.editResponse?.(headers);
    body = ur;
    ur.on('error', call.bodyBroke);
  } else {
    const h2 = call as H2Call;
    ({ status, headers } = h2ToH1Response(h2.head ?? {}));
    hooks.editResponse?.(headers);
    hooks.onResponse(status, h2.grpcStatus);
    body = h2.stream;
  }
  res.writeHead(status, headers);
  copyBodyToH1(body, res);
  body.on('end', call.bodyEnded);
}

/** Response half, to an HTTP/2 caller: trailers intact when the upstream speaks HTTP/2. */
export function writeResponseH2(stream: CallerStream, call: UpstreamCall, hooks: ExchangeHooks): void {
  call.respondedTo = hooks;
  if (call instanceof H1Call) {
    const ur = call.res as H1Response;
    hooks.onResponse(call.status, undefined);
    if (stream.destroyed) return void ur.resume();
    const head = h1ToH2Response(call.status, ur.headers);
    hooks.editResponse?.(head);
    stream.respond(head);
    copyBodyToH2(ur, stream);
    ur.on('end', call.bodyEnded);
    ur.on('error', call.bodyBroke);
    return;
  }
  const h2 = call as H2Call;
  if (stream.destroyed) return;
  const head = h2ToH2Response(h2.head ?? {});
  hooks.editResponse?.(head);
  if (h2.endStream) {
    hooks.onResponse(h2.status, h2.grpcStatus);
    stream.respond(head, { endStream: true });
    call.finished = true;
    hooks.onEnd(false);
    return;
  }
  stream.on('wantTrailers', () => {
    if (h2.trailers) stream.sendTrailers(cleanTrailers(h2.trailers));
    else stream.close();
  });
  stream.respond(head, { waitForTrailers: true });
  hooks.onResponse(h2.status, h2.grpcStatus);
  copyBodyToH2(h2.stream, stream);
  h2.stream.on('end', call.bodyEnded);
}
