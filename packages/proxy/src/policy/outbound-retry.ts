// The outbound route retry layer: for a request whose HTTPRoute rule carries a retry policy, send it,
// hold the response head, and send it again while the decision (retry-policy.ts, Linkerd's) says so.
// Only requests on such routes come here (outbound-routes.ts decides); every other request takes
// HttpExchange.forward() and pays nothing for retries.
//   body      the first attempt streams the caller's body upstream as it arrives and keeps a copy of up
//             to max_request_bytes; a retry replays the copy. Past the limit the copy is dropped and
//             the request is not retried; nor is it while the body has not ended.
//   response  an attempt's response head is held (its body unread) until the decision: a retried
//             response is discarded (HTTP/1: drained so the connection is reused; HTTP/2: cancelled),
//             the kept one goes to the caller as forward() would send it (trailers included).
//   endpoint  each retry is balanced again, so it may go to another endpoint (as Linkerd's retries sit
//             above its balancer); when none can take it the held response goes back (retry overflow).
//   timeouts  each attempt but the last is cut at the route's per-attempt timeout (a retryable
//             outcome); the route's request timeout (HttpExchange) bounds all attempts together.
import { request as h1request, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { constants as h2c, type ClientHttp2Stream, type IncomingHttpHeaders as H2Headers } from 'node:http2';
import type { Readable, Writable } from 'node:stream';
import type { CompiledRetry } from '@minimesh/policy/client';
import { sleep, type Logger } from '@minimesh/runtime';
import { ProxyError } from '../errors.js';
import { H1Exchange, H2Exchange, type HttpExchange } from '../http/exchange.js';
import { copyBodyToH2, type Cancel, type ExchangeHooks } from '../http/forward.js';
import { H2_REQUEST } from '../http/h2-pool.js';
import {
  cleanTrailers,
  h1ToH2Request,
  h1ToH2Response,
  h2ToH1Response,
  h2ToH2Request,
  h2ToH2Response,
  ORIG_PROTO_HEADER,
  ORIG_PROTO_HTTP11,
} from '../http/headers.js';
import type { Labels } from '../metrics/metrics.js';
import type { HttpUpstream } from '../http/upstream.js';
import type { Endpoint } from '../targets.js';
import type { RouteRetryCounters } from './retry-metrics.js';
import { attemptTimeoutMs, decideRetry, retryBackoffMs, type AttemptOutcome, type BodyState } from './retry-policy.js';

/** A route's retry policy and its metrics: what outbound-routes.ts hands the stack for such a request. */
export interface RetryPlan {
  retry: CompiledRetry;
  counters: RouteRetryCounters;
}

export interface RetrySendOptions {
  ex: HttpExchange;
  plan: RetryPlan;
  /** The first attempt's endpoint (already balanced). */
  ep: Endpoint;
  /** Balances a retry; throws when no endpoint can take it. */
  pick: () => Endpoint;
  connect: (ep: Endpoint) => HttpUpstream;
  /** The exchange's metric labels (those of the first attempt's endpoint). */
  labels: Labels;
  /** :authority for an HTTP/1 request without Host that goes over HTTP/2. */
  authority: string;
  log: Logger;
}

/** Sends `ex` under its route's retry policy. */
export function sendWithRetries(o: RetrySendOptions): void {
  const up = o.connect(o.ep);
  const run = new RetryRun(o);
  o.ex.forwardVia(up, o.labels, (hooks) => run.start(up, hooks));
}

const NO_BODY_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

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
    // A bodiless HTTP/1 request is still read to its end, so the caller's connection can be reused.
    if (!hasBody) src.resume();
  }

  /** Streams the body into the first attempt's upstream request (ended with the body). */
  pipeFirst(sink: Writable): void {
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
  detach(sink: Writable): void {
    if (this.live !== sink) return;
    this.live = undefined;
    if (this.src.isPaused()) this.src.resume();
  }

  /** Writes the whole copied body into a retry's upstream request (only once complete and not capped). */
  replay(sink: Writable): void {
    for (const c of this.chunks) sink.write(c);
    sink.end();
  }
}

/** One attempt: its upstream request and, once it came, the held response head. */
interface Attempt {
  n: number;
  kind: 'h1' | 'h2';
  /** The upstream request (its body side). */
  req: ClientRequest | ClientHttp2Stream;
  /** HTTP/1: the response; HTTP/2: the request stream carries the response too. */
  res?: IncomingMessage;
  head?: H2Headers;
  status: number;
  endStream: boolean;
  trailers?: H2Headers;
  outcome?: AttemptOutcome;
  err?: Error;
  /** After the head went to the caller: a failure of the response stream. */
  onLateError?: (err: Error) => void;
  abort(): void;
}

function grpcStatusOf(h: H2Headers | undefined): number | undefined {
  const v = h?.['grpc-status'];
  return v === undefined ? undefined : Number(v);
}

class RetryRun {
  private readonly body: RequestBody;
  private readonly h1: H1Exchange | undefined;
  private readonly h2: H2Exchange | undefined;
  private cancelled = false;
  private current: Attempt | undefined;
  private committed: Attempt | undefined;
  private readonly sleeping = new AbortController();

  constructor(private readonly o: RetrySendOptions) {
    const ex = o.ex;
    this.h1 = ex instanceof H1Exchange ? ex : undefined;
    this.h2 = ex instanceof H2Exchange ? ex : undefined;
    let src: Readable;
    let hasBody: boolean;
    if (this.h1) {
      const req = this.h1.req;
      src = req;
      hasBody = !(
        NO_BODY_METHODS.has(req.method ?? 'GET') &&
        req.headers['content-length'] === undefined &&
        req.headers['transfer-encoding'] === undefined
      );
    } else if (this.h2) {
      src = this.h2.stream;
      hasBody = !this.h2.stream.endAfterHeaders;
    } else throw new Error('an exchange that is neither HTTP/1 nor HTTP/2');
    this.body = new RequestBody(src, hasBody, o.plan.retry.maxRequestBytes);
  }

  start(first: HttpUpstream, hooks: ExchangeHooks): Cancel {
    // The caller went away before an answer: stop retrying.
    this.o.ex.downstream.once('close', () => {
      if (!this.committed) this.cancel();
    });
    void this.loop(first, hooks).catch((err: unknown) => {
      // A bug in this layer must still answer the caller.
      this.o.log.warn({ err }, 'outbound retry layer failed');
      if (!this.cancelled && !this.committed) hooks.onError(err as Error);
    });
    return () => this.cancel();
  }

  private cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.sleeping.abort();
    this.current?.abort();
    this.committed?.abort();
  }

  private async loop(first: HttpUpstream, hooks: ExchangeHooks): Promise<void> {
    const { retry, counters } = this.o.plan;
    let a = await this.attempt(first, 1);
    for (;;) {
      if (this.cancelled) return this.discard(a);
      const outcome = a.outcome ?? { kind: 'error' };
      const d = decideRetry(retry, a.n, outcome, this.body);
      if (d === 'done') {
        if (a.n > 1 && outcome.kind === 'response') counters.successes.value++;
        break;
      }
      if (d === 'unbuffered') break;
      if (d === 'limit') {
        counters.limitExceeded.value++;
        break;
      }
      await sleep(retryBackoffMs(retry, a.n), this.sleeping.signal);
      if (this.cancelled) return this.discard(a);
      let up: HttpUpstream;
      try {
        up = this.o.connect(this.o.pick());
      } catch (err) {
        counters.overflow.value++;
        this.o.log.debug({ err: (err as Error).message }, 'no endpoint for a retry: returning the last response');
        break;
      }
      this.o.log.debug(
        { attempt: a.n + 1, status: a.status || undefined, outcome: outcome.kind },
        'retrying an outbound request',
      );
      this.discard(a);
      counters.requests.value++;
      a = await this.attempt(up, a.n + 1);
    }
    this.commit(a, hooks);
  }

  /** Sends attempt n and resolves once its response head, its failure, or its timeout is known. */
  private attempt(up: HttpUpstream, n: number): Promise<Attempt> {
    const ex = this.o.ex;
    return new Promise<Attempt>((resolve) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      let a: Attempt;
      const settle = (outcome: AttemptOutcome, err?: Error): void => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        a.outcome = outcome;
        if (err) a.err = err;
        if (this.current === a) this.current = undefined;
        resolve(a);
      };
      const failed = (err: Error): void => {
        if (settled) return a.onLateError?.(err);
        const refused =
          a.kind === 'h2' &&
          ((a.req as ClientHttp2Stream).rstCode === h2c.NGHTTP2_REFUSED_STREAM || /REFUSED_STREAM/.test(err.message));
        settle({ kind: refused ? 'refused' : 'error' }, err);
      };
      if (up.kind === 'h1') {
        const h1 = this.h1;
        const source = h1 ? h1.req.headers : h2ToH1Headers(ex.headers);
        const headers: OutgoingHttpHeaders = { ...source };
        delete headers.connection;
        delete headers['keep-alive'];
        delete headers['proxy-connection'];
        const req = h1request(
          {
            host: up.endpoint.ip,
            port: up.endpoint.port,
            method: ex.method,
            path: ex.path,
            headers,
            agent: up.agent,
          },
          (res) => {
            a.res = res;
            a.status = res.statusCode ?? 502;
            res.on('error', (err) => a.onLateError?.(err));
            res.on('aborted', () => a.onLateError?.(new Error('upstream response aborted')));
            settle({ kind: 'response', status: a.status });
          },
        );
        a = {
          n,
          kind: 'h1',
          req,
          status: 0,
          endStream: false,
          abort: () => {
            req.destroy();
            a.res?.destroy();
          },
        };
        req.on('error', failed);
      } else {
        const h1 = this.h1;
        const headers = h1
          ? h1ToH2Request(h1.method, h1.path, h1.req.headers, h1.req.headers.host ?? this.o.authority, {
              [ORIG_PROTO_HEADER]: ORIG_PROTO_HTTP11,
            })
          : h2ToH2Request(ex.headers as H2Headers);
        let stream: ClientHttp2Stream;
        try {
          stream = up.session.request(headers, this.body.hasBody ? H2_REQUEST.body : H2_REQUEST.end);
        } catch (err) {
          a = { n, kind: 'h2', req: undefined as never, status: 0, endStream: false, abort: () => undefined };
          settle({ kind: 'error' }, err as Error);
          return;
        }
        a = {
          n,
          kind: 'h2',
          req: stream,
          status: 0,
          endStream: false,
          abort: () => {
            if (!stream.destroyed && !stream.closed) stream.close(h2c.NGHTTP2_CANCEL);
          },
        };
        stream.on('response', (h, flags) => {
          a.head = h;
          a.status = Number(h[':status'] ?? 200);
          a.endStream = ((flags ?? 0) & h2c.NGHTTP2_FLAG_END_STREAM) !== 0;
          settle({ kind: 'response', status: a.status });
        });
        stream.on('trailers', (t) => (a.trailers = t));
        stream.on('error', failed);
      }
      this.current = a;
      const ms = attemptTimeoutMs(this.o.plan.retry, n);
      if (ms !== undefined)
        timer = setTimeout(() => {
          a.abort();
          settle(
            { kind: 'timeout' },
            new ProxyError(
              'MINIMESH_PROXY_RESPONSE_TIMEOUT',
              `no response within the route's per-try timeout (${ms} ms)`,
            ),
          );
        }, ms);
      // The body: streamed into the first attempt, replayed into a retry (a bodiless request ends here).
      const sink = a.req as Writable;
      if (!this.body.hasBody) {
        if (a.kind === 'h1') sink.end();
      } else if (n === 1) this.body.pipeFirst(sink);
      else this.body.replay(sink);
    });
  }

  /** Lets go of an attempt that is not going to the caller. */
  private discard(a: Attempt): void {
    if (a.n === 1 && a.req) this.body.detach(a.req as Writable);
    if (a.kind === 'h1') {
      if (a.res) a.res.resume();
      else a.req?.destroy();
    } else a.abort();
  }

  /** The kept attempt goes to the caller: its response as forward() would send it, or its error. */
  private commit(a: Attempt, hooks: ExchangeHooks): void {
    if (this.cancelled) return this.discard(a);
    if (a.outcome?.kind !== 'response') {
      return hooks.onError(a.err ?? new Error('upstream request failed'));
    }
    this.committed = a;
    let finished = false;
    const finish = (failed: boolean): void => {
      if (finished) return;
      finished = true;
      hooks.onEnd(failed);
    };
    const upBody = (a.kind === 'h1' ? a.res : a.req) as Readable;
    if (this.h1) {
      const res = this.h1.res;
      const { status, headers } =
        a.kind === 'h1'
          ? { status: a.status, headers: h1ResponseHeaders(a.res as IncomingMessage) }
          : h2ToH1Response(a.head ?? {});
      hooks.onResponse(status, grpcStatusOf(a.head));
      a.onLateError = (err) => {
        finish(true);
        res.destroy(err);
      };
      res.writeHead(status, headers);
      upBody.pipe(res);
      upBody.once('end', () => finish(false));
      res.on('close', () => {
        if (!res.writableFinished) a.abort();
      });
      return;
    }
    const stream = (this.h2 as H2Exchange).stream;
    if (stream.destroyed) {
      finish(true);
      return this.discard(a);
    }
    a.onLateError = () => {
      finish(true);
      if (!stream.destroyed) stream.close(h2c.NGHTTP2_INTERNAL_ERROR);
    };
    if (a.kind === 'h2' && a.endStream) {
      hooks.onResponse(a.status, grpcStatusOf(a.head));
      stream.respond(h2ToH2Response(a.head ?? {}), { endStream: true });
      return finish(false);
    }
    const head =
      a.kind === 'h2' ? h2ToH2Response(a.head ?? {}) : h1ToH2Response(a.status, (a.res as IncomingMessage).headers);
    stream.respond(head, { waitForTrailers: true });
    hooks.onResponse(a.status, grpcStatusOf(a.head));
    stream.on('wantTrailers', () => {
      if (a.trailers) stream.sendTrailers(cleanTrailers(a.trailers));
      else stream.close();
    });
    copyBodyToH2(upBody, stream);
    upBody.once('end', () => finish(false));
  }
}

function h1ResponseHeaders(res: IncomingMessage): OutgoingHttpHeaders {
  const rh: OutgoingHttpHeaders = { ...res.headers };
  delete rh.connection;
  delete rh['keep-alive'];
  return rh;
}

/** An HTTP/2 request's headers for an HTTP/1 upstream (not an outbound combination today; kept total). */
function h2ToH1Headers(h: Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const k in h) if (k.charCodeAt(0) !== 58) out[k] = h[k];
  const authority = h[':authority'];
  if (authority !== undefined) out.host = String(authority);
  return out;
}
