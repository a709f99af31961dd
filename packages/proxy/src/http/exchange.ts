// One HTTP exchange as the stages see it, whatever the caller spoke: an HTTP/1 request/response pair or
// an HTTP/2 stream. It is the request's state (targets are values; this is what changes): it knows how
// to answer in the caller's protocol (respond.ts), how to go to an upstream (the one forwarder,
// forward.ts), and it is its own metrics, load and timeout hook, so a request costs one object rather
// than a handful of closures.
import type { OutgoingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { constants as http2constants, type IncomingHttpHeaders as H2Headers } from 'node:http2';
import type { Logger } from '@minimesh/runtime';
import type { CompiledBackend } from '@minimesh/policy/client';
import { ProxyError, RouteAnswer, toConnectError, unwrapCause } from '../errors.js';
import type { Rejectable } from '../layers.js';
import type { Labels, ProxyMetrics } from '../metrics/metrics.js';
import { answerGrpc, answerH1, answerH2, errorCode, isGrpc, respondH1, respondH2 } from '../respond.js';
import type { Direction } from '../targets.js';
import {
  hasNoBody,
  sendH1,
  sendH2,
  writeResponseH1,
  writeResponseH2,
  type BodySource,
  type CallSink,
  type ExchangeHooks,
  type UpstreamCall,
} from './forward.js';
import {
  h1ToH1Request,
  h1ToH2Request,
  h2ToH1Request,
  h2ToH2Request,
  ORIG_PROTO_HEADER,
  ORIG_PROTO_HTTP11,
} from './headers.js';
import type { Connected, HttpUpstream } from './upstream.js';
import type { H1Answer, H1Incoming } from './h1-wire.js';
import type { CallerStream } from './h2-engine.js';

/** What every exchange of one stack reports to. */
/**
 * Where a response goes, as the taps (which count what is written) and the retries (which watch it close)
 * see it: an HTTP/1 answer (h1-server.ts) or an HTTP/2 stream.
 */
export interface Downstream {
  write(chunk: never, ...rest: never[]): boolean;
  end(...rest: never[]): unknown;
  once(event: 'close', listener: () => void): unknown;
}

export interface ExchangeSink {
  readonly direction: Direction;
  readonly metrics: ProxyMetrics;
  readonly log: Logger;
}

/** What the stages below the route see of a request: an exchange, an HTTP/1 Upgrade, or a retry's attempt. */
export interface HttpRequest extends Rejectable {
  /** The protocol the caller spoke. */
  readonly protocol: 'http1' | 'h2';
  /** An HTTP/1 Upgrade (WebSocket): connect opens a raw connection for it, forward relays its bytes. */
  readonly upgrade: boolean;
  /** The exchange tap may observe through this request: the exchange itself, or a retry's first attempt. */
  readonly observable: HttpExchange | undefined;
  /** The caller's exchange this request is (or is an attempt or a mirror of); undefined for an Upgrade. */
  readonly exchange: HttpExchange | undefined;
  /** Answers the caller with `err`, uncounted (a connection that could not even be opened). */
  fail(err: unknown): void;
  /** Sends it where the connect stage said. */
  forward(t: Connected): void;
}

/** Told how an exchange's response goes (the tap layer's view of a tapped request). */
export interface ExchangeObserver {
  responseInit(status: number): void;
  responseEnd(opts: { grpcStatus?: number | undefined; failed?: boolean }): void;
}

const NO_EXTRA: Record<string, string> = {};

/** A route's metrics for one request (policy/route-metrics.ts): the backend it went to, how it ended. */
export interface RouteStats {
  backend(b: CompiledBackend): void;
  /** Counted once: the response's status (0: none) and gRPC status, or the proxy error code that ended it. */
  done(status: number, grpcStatus: number | undefined, errorCode: string | undefined): void;
}

/** Something sending an exchange upstream that a route's timeout or a gone caller can stop. */
export interface Cancellable {
  cancel(): void;
}

/** Another way to send an exchange (the retry transport, retry.ts): started once the exchange is counted. */
export interface ExchangeTransport extends Cancellable {
  start(hooks: ExchangeHooks): void;
}

export abstract class HttpExchange implements ExchangeHooks, CallSink, HttpRequest {
  abstract readonly protocol: 'http1' | 'h2';
  readonly upgrade = false;
  /** Host (HTTP/1) or :authority (HTTP/2), as the caller sent it. */
  abstract readonly authority: string | undefined;
  /** The request headers, for stages that read or strip some (never pseudo-headers). */
  abstract readonly headers: Record<string, string | string[] | undefined>;
  abstract readonly grpc: boolean;
  abstract readonly method: string;
  abstract readonly path: string;
  abstract readonly scheme: 'http' | 'https';
  abstract readonly peer: { ip: string; port: number };
  abstract readonly downstream: Downstream;
  private labels: Labels | undefined;
  private upstream: HttpUpstream | undefined;
  private t0 = 0;
  private loadT0 = -1;
  /** Sent through the retry transport (forwardVia). */
  private retried = false;
  private status = 0;
  private grpcStatus: number | undefined;
  /** A route's request timeout (the outbound route stage sets it), armed once the request is sent; 0: none. */
  requestTimeoutMs = 0;
  /** The route's metrics of this request (the outbound route stage sets them); undefined: no route. */
  routeStats: RouteStats | undefined = undefined;
  /** A route's response header filters (the outbound route stage sets them); undefined: none. */
  editResponse: ((headers: OutgoingHttpHeaders) => void) | undefined = undefined;
  private sending: Cancellable | undefined;
  private timer: NodeJS.Timeout | undefined;
  private expired = false;
  /** Set only while a tap takes this request. */
  private observer: ExchangeObserver | undefined;

  constructor(protected readonly sink: ExchangeSink) {}

  get observable(): HttpExchange {
    return this;
  }

  get exchange(): HttpExchange {
    return this;
  }

  /** A peer proxy upgraded this request from HTTP/1 (l5d-orig-proto): the app gets HTTP/1 back. */
  get upgradedHttp1(): boolean {
    return false;
  }

  /** Answers the caller with `err` (a stage failed before anything was sent upstream). */
  abstract fail(err: unknown): void;

  /** The response broke after its head: ended as failed, the caller's side broken off. */
  abstract onBroken(err: Error): void;

  /** A stage cannot take the request (no endpoints, ...): counted in proxy_errors_total and answered with `err`. */
  reject(err: unknown): void {
    this.sink.metrics.error(this.sink.direction, errorCode(err));
    if (err instanceof RouteAnswer)
      this.routeStats?.done(err.status, this.grpc ? err.grpcStatus : undefined, undefined);
    else this.routeStats?.done(0, undefined, errorCode(err));
    this.fail(err);
  }

  /**
   * Answers the caller as a route says (a redirect, an injected failure): `status`, and why. A gRPC
   * caller given `grpcStatus` gets that gRPC status instead (a gRPC route's injected failure).
   */
  abstract answer(status: number, message: string, location: string | undefined, grpcStatus?: number): void;

  /** A route's URL rewrite: the authority (Host / :authority) and/or the path (with query) it goes on with. */
  abstract rewrite(authority: string | undefined, path: string | undefined): void;

  /** Drops the request headers `omit` matches (the inbound side drops the mesh's own). */
  stripHeaders(omit: (lowerCaseName: string) => boolean): void {
    const headers = this.headers;
    for (const name in headers) if (omit(name)) delete headers[name];
  }

  /** A tap takes this request: it hears how the response goes. */
  observe(observer: ExchangeObserver | undefined): void {
    this.observer = observer;
  }

  /** The request body as it arrives (read only when the request has one). */
  abstract readonly requestStream: Readable;
  /** The request has a body to send. */
  abstract readonly hasBody: boolean;

  /**
   * Sends the request to `up` with `body` (the request half of forward.ts, headers converted for the
   * upstream), its answer going to `sink`: the exchange itself, or a retry attempt that holds it.
   */
  abstract sendTo(
    up: HttpUpstream,
    extra: Record<string, string>,
    authority: string,
    body: BodySource | undefined,
    sink: CallSink,
  ): UpstreamCall | undefined;

  /** Writes `call`'s response to the caller (the response half of forward.ts), reported to this exchange. */
  abstract respondFrom(call: UpstreamCall): void;

  /** Ties `call` to the caller: the caller going away cancels it. */
  abstract couple(call: UpstreamCall): void;

  onHead(call: UpstreamCall): void {
    this.respondFrom(call);
  }

  /** Sends the exchange where the connect stage said, counting it under its labels. */
  forward(t: Connected): void {
    const up = t.upstream as HttpUpstream;
    this.begin(up, t.labels);
    const call = this.send(up, t.extra ?? NO_EXTRA, t.authority);
    if (call !== undefined) {
      this.sending = call;
      this.couple(call);
    }
    this.armTimeout();
  }

  /**
   * forward() through `transport` (the retry transport, retry.ts) with `up` as the first attempt's
   * upstream: counted, tapped, load-tracked and bounded by the route's request timeout the same way.
   */
  forwardVia(up: HttpUpstream, labels: Labels, transport: ExchangeTransport): void {
    // Each attempt tells its own endpoint's circuit breaker how it went (RetryAttempt), not the exchange.
    this.retried = true;
    this.begin(up, labels);
    this.sending = transport;
    transport.start(this);
    this.armTimeout();
  }

  /** Before the request goes to `up`: counted under `labels`, load-tracked on the endpoint. */
  private begin(up: HttpUpstream, labels: Labels): void {
    this.labels = labels;
    this.upstream = up;
    this.t0 = this.sink.metrics.request(labels);
    const load = up.endpoint.load;
    if (load) this.loadT0 = load.start();
  }

  /** After it went: the route's request timeout, when it has one. */
  private armTimeout(): void {
    if (this.requestTimeoutMs > 0) this.timer = setTimeout(() => this.expire(), this.requestTimeoutMs);
  }

  /** forward()'s send: the request's own body, straight to the caller when the head comes. */
  protected abstract send(up: HttpUpstream, extra: Record<string, string>, authority: string): UpstreamCall | undefined;

  /** Resets the downstream side (the response had begun when the route's timeout fired). */
  protected abstract reset(): void;

  /** The route's request timeout fired: 504 before the response head, a reset after it. */
  private expire(): void {
    this.timer = undefined;
    if (this.expired) return;
    this.expired = true;
    const err = new ProxyError('MINIMESH_PROXY_REQUEST_TIMEOUT', `request timed out after ${this.requestTimeoutMs} ms`);
    this.sink.metrics.error(this.sink.direction, err.code);
    this.sink.log.debug({ err: err.message }, `${this.sink.direction} request timed out (route timeout)`);
    this.endLoad(true);
    this.observer?.responseEnd({ failed: true });
    this.routeStats?.done(this.status, this.grpcStatus, err.code);
    this.sending?.cancel();
    if (this.status === 0) this.fail(err);
    else this.reset();
  }

  onResponse(status: number, grpcStatus: number | undefined): void {
    if (this.expired) return;
    // A 5xx or a gRPC error in the head is a failure to the endpoint's circuit breaker (failure accrual).
    this.endLoad(status >= 500 || (grpcStatus !== undefined && grpcStatus !== 0));
    this.status = status;
    this.grpcStatus = grpcStatus;
    this.observer?.responseInit(status);
  }

  onEnd(failed: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    this.observer?.responseEnd({ grpcStatus: this.grpcStatus, failed });
    if (this.status !== 0)
      this.routeStats?.done(this.status, this.grpcStatus, failed ? 'MINIMESH_PROXY_UPSTREAM_FAILED' : undefined);
    if (this.status === 0 || !this.labels) return;
    this.sink.metrics.response(this.labels, this.t0, this.status, this.grpcStatus, failed);
  }

  onError(raw: Error): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.expired) return;
    this.endLoad(true);
    this.observer?.responseEnd({ failed: true });
    const err = this.explain(raw);
    this.sink.metrics.error(this.sink.direction, errorCode(err));
    this.routeStats?.done(0, undefined, errorCode(err));
    this.sink.log.debug({ err: err.message }, `${this.sink.direction} request failed`);
    this.fail(err);
  }

  /** The upstream error in the catalogue, with the endpoint and (for a broken session) the session's cause. */
  private explain(err: Error): Error {
    const up = this.upstream;
    if (!up) return err;
    if (up.kind === 'h2')
      return toConnectError(up.endpoint.key, up.pool.lastError(up.session) ?? unwrapCause(err), up.identity);
    return toConnectError(up.endpoint.key, unwrapCause(err));
  }

  private endLoad(failed: boolean): void {
    if (this.loadT0 < 0) return;
    this.upstream?.endpoint.load?.end(this.loadT0, this.retried ? undefined : failed);
    this.loadT0 = -1;
  }
}

/** An HTTP/1 request and its response. */
export class H1Exchange extends HttpExchange {
  readonly protocol = 'http1';
  readonly grpc = false;

  constructor(
    readonly req: H1Incoming,
    readonly res: H1Answer,
    sink: ExchangeSink,
  ) {
    super(sink);
  }

  get authority(): string | undefined {
    return this.req.headers.host;
  }

  get headers(): Record<string, string | string[] | undefined> {
    return this.req.headers;
  }

  get method(): string {
    return this.req.method ?? 'GET';
  }

  get path(): string {
    return this.req.url ?? '/';
  }

  get scheme(): 'http' {
    return 'http';
  }

  get peer(): { ip: string; port: number } {
    return { ip: this.req.socket.remoteAddress ?? '', port: this.req.socket.remotePort ?? 0 };
  }

  get downstream(): Downstream {
    return this.res;
  }

  get requestStream(): Readable {
    return this.req;
  }

  get hasBody(): boolean {
    return !hasNoBody(this.req);
  }

  fail(err: unknown): void {
    respondH1(this.res, err);
  }

  rewrite(authority: string | undefined, path: string | undefined): void {
    if (authority !== undefined) this.req.headers.host = authority;
    if (path !== undefined) this.req.url = path;
  }

  answer(status: number, message: string, location: string | undefined): void {
    this.routeStats?.done(status, undefined, undefined);
    answerH1(this.res, status, message, location);
  }

  protected reset(): void {
    this.res.destroy();
  }

  onBroken(err: Error): void {
    this.onEnd(true);
    // Node sends an HTTP/1 head with the first body write: a client may see no answer at all.
    this.sink.log.warn(
      { err: err.message },
      `${this.sink.direction} response broke after its head; the client's connection is reset`,
    );
    this.res.destroy(err);
  }

  protected send(up: HttpUpstream, extra: Record<string, string>, authority: string): UpstreamCall | undefined {
    const bodiless = hasNoBody(this.req);
    // A bodiless request is still read to its end, so the caller's connection can be reused.
    if (bodiless && up.kind === 'h1') this.req.resume();
    return this.sendTo(up, extra, authority, bodiless ? undefined : this.req, this);
  }

  sendTo(
    up: HttpUpstream,
    extra: Record<string, string>,
    authority: string,
    body: BodySource | undefined,
    sink: CallSink,
  ): UpstreamCall | undefined {
    const req = this.req;
    if (up.kind === 'h1') {
      return sendH1(up.agent, req.method, req.url, h1ToH1Request(req.headers, extra), body, sink);
    }
    // Over HTTP/2 (between proxies): marked, so the far side restores HTTP/1.
    const headers: OutgoingHttpHeaders = h1ToH2Request(
      req.method ?? 'GET',
      req.url ?? '/',
      req.headers,
      req.headers.host ?? authority,
      { [ORIG_PROTO_HEADER]: ORIG_PROTO_HTTP11, ...extra },
    );
    return sendH2(up.session, headers, body, sink);
  }

  respondFrom(call: UpstreamCall): void {
    writeResponseH1(this.res, call, this);
  }

  couple(call: UpstreamCall): void {
    const res = this.res;
    res.on('close', () => {
      if (!res.writableFinished) call.cancel();
    });
  }
}

/** An HTTP/2 stream (HTTP/2, gRPC, or HTTP/1 upgraded by a peer proxy). */
export class H2Exchange extends HttpExchange {
  readonly protocol = 'h2';
  readonly grpc: boolean;

  constructor(
    readonly stream: CallerStream,
    readonly headers: H2Headers,
    sink: ExchangeSink,
  ) {
    super(sink);
    this.grpc = isGrpc(headers['content-type']);
  }

  get authority(): string | undefined {
    return this.headers[':authority'] ?? this.headers.host;
  }

  get method(): string {
    return String(this.headers[':method'] ?? 'GET');
  }

  get path(): string {
    return String(this.headers[':path'] ?? '/');
  }

  get scheme(): 'http' | 'https' {
    return this.headers[':scheme'] === 'https' ? 'https' : 'http';
  }

  get peer(): { ip: string; port: number } {
    const s = this.stream.session?.socket;
    return { ip: s?.remoteAddress ?? '', port: s?.remotePort ?? 0 };
  }

  get downstream(): Downstream {
    return this.stream;
  }

  override get upgradedHttp1(): boolean {
    return this.headers[ORIG_PROTO_HEADER] === ORIG_PROTO_HTTP11;
  }

  get requestStream(): Readable {
    return this.stream;
  }

  get hasBody(): boolean {
    return !this.stream.endAfterHeaders;
  }

  fail(err: unknown): void {
    respondH2(this.stream, this.grpc, err);
  }

  rewrite(authority: string | undefined, path: string | undefined): void {
    const h = this.headers;
    if (authority !== undefined) {
      h[':authority'] = authority;
      if (h.host !== undefined) h.host = authority;
    }
    if (path !== undefined) h[':path'] = path;
  }

  answer(status: number, message: string, location: string | undefined, grpcStatus?: number): void {
    const grpc = this.grpc && grpcStatus !== undefined;
    this.routeStats?.done(grpc ? 200 : status, grpc ? grpcStatus : undefined, undefined);
    if (grpc) return answerGrpc(this.stream, grpcStatus, message);
    answerH2(this.stream, status, message, location);
  }

  protected send(up: HttpUpstream, extra: Record<string, string>, authority: string): UpstreamCall | undefined {
    const bodiless = this.stream.endAfterHeaders;
    if (bodiless && up.kind === 'h1') this.stream.resume();
    return this.sendTo(up, extra, authority, bodiless ? undefined : this.stream, this);
  }

  sendTo(
    up: HttpUpstream,
    extra: Record<string, string>,
    _authority: string,
    body: BodySource | undefined,
    sink: CallSink,
  ): UpstreamCall | undefined {
    if (up.kind === 'h2') return sendH2(up.session, h2ToH2Request(this.headers, extra), body, sink);
    return sendH1(up.agent, this.method, this.path, h2ToH1Request(this.headers, extra), body, sink);
  }

  respondFrom(call: UpstreamCall): void {
    writeResponseH2(this.stream, call, this);
  }

  couple(call: UpstreamCall): void {
    const stream = this.stream;
    if (call.kind === 'h2')
      stream.on('close', () => {
        if (stream.rstCode !== undefined && stream.rstCode !== http2constants.NGHTTP2_NO_ERROR) call.cancel();
      });
    else
      stream.on('close', () => {
        if (!call.finished) call.cancel();
      });
  }

  protected reset(): void {
    if (!this.stream.destroyed) this.stream.close(http2constants.NGHTTP2_CANCEL);
  }

  onBroken(err?: Error): void {
    this.onEnd(true);
    this.sink.log.warn(
      { err: err?.message },
      `${this.sink.direction} response broke after its head; the client's stream is reset`,
    );
    this.stream.close(http2constants.NGHTTP2_INTERNAL_ERROR);
  }
}
