// Moving one HTTP exchange from a downstream (HTTP/1 req/res or an HTTP/2 stream) to an upstream
// (an HTTP/1 keep-alive pool or a multiplexed HTTP/2 session), in the four combinations the proxy needs.
// Errors before the response head go to hooks.onError (the caller answers in the caller's protocol);
// errors after it abort the downstream.
import {
  request as h1request,
  type Agent,
  type ClientRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type RequestOptions,
  type ServerResponse,
} from 'node:http';
import type { Readable } from 'node:stream';
import {
  constants as h2c,
  type ClientHttp2Session,
  type IncomingHttpHeaders as H2Headers,
  type ServerHttp2Stream,
} from 'node:http2';
import {
  cleanTrailers,
  h1ToH2Request,
  h1ToH2Response,
  h2ToH1Request,
  h2ToH1Response,
  h2ToH2Request,
  h2ToH2Response,
} from './headers.js';
import { isStaleKeepAlive } from '@minimesh/runtime';
import { H2_REQUEST } from './h2-pool.js';

export interface ExchangeHooks {
  /** The response head is known (before any body byte is sent downstream). */
  onResponse(status: number, grpcStatus: number | undefined): void;
  /** The exchange finished (failed = a stream error after the head). */
  onEnd(failed: boolean): void;
  /** Failure before the response head (the raw upstream error): the caller writes the error response. */
  onError(err: Error): void;
}

function grpcStatusOf(h: H2Headers | undefined): number | undefined {
  const v = h?.['grpc-status'];
  return v === undefined ? undefined : Number(v);
}

/** Ends the upstream side of an exchange (a route's timeout); a no-op once it has ended. */
export type Cancel = () => void;
const NO_CANCEL: Cancel = () => undefined;

const NO_BODY = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/**
 * Copies a response body into an HTTP/2 server stream, ending the stream only once its last write has
 * completed. With pipe(), end() follows the last write at once, the stream closes (and is destroyed)
 * while that write is still in flight, and Node then builds an ERR_STREAM_DESTROYED (a stack trace
 * and all) for every response when the write completes: about 8 % of the inbound proxy's CPU.
 */
export function copyBodyToH2(src: Readable, dst: ServerHttp2Stream): void {
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

/** An HTTP/1 request that carries no body (a bodiless method without Content-Length or Transfer-Encoding). */
function hasNoBody(req: IncomingMessage): boolean {
  return (
    NO_BODY.has(req.method ?? 'GET') &&
    req.headers['content-length'] === undefined &&
    req.headers['transfer-encoding'] === undefined
  );
}

/** How many times a bodiless request goes again after a kept-alive app connection turned out closed. */
const MAX_STALE_RETRIES = 3;

/**
 * The keep-alive race (isStaleKeepAlive, @minimesh/runtime): an app that closes an idle connection (a
 * graceful shutdown, its keep-alive timeout) just as the proxy picks it from the pool fails the request
 * before any response byte. A request without a body loses nothing by going again on another
 * connection; one with a body was consumed and never goes twice. Checked in the error handler only:
 * the exchange's hot path allocates nothing for it. resend() sends the bodiless request again, on
 * whichever connection the pool gives (a new one if none is idle).
 */
function resend(
  options: RequestOptions,
  onResponse: (res: IncomingMessage) => void,
  onError: (err: Error) => void,
): ClientRequest {
  const up = h1request(options, onResponse);
  up.on('error', onError);
  up.end();
  return up;
}

/** HTTP/1 downstream → HTTP/2 upstream session (outbound, between meshed proxies). */
export function h1ToH2(
  req: IncomingMessage,
  res: ServerResponse,
  session: ClientHttp2Session,
  authority: string,
  extra: Record<string, string>,
  hooks: ExchangeHooks,
): Cancel {
  const headers = h1ToH2Request(req.method ?? 'GET', req.url ?? '/', req.headers, authority, extra);
  const hasBody = !hasNoBody(req);
  let up;
  try {
    up = session.request(headers, hasBody ? H2_REQUEST.body : H2_REQUEST.end);
  } catch (err) {
    hooks.onError(err as Error);
    return NO_CANCEL;
  }
  let headSent = false;
  let finished = false;
  up.on('response', (h) => {
    const { status, headers: rh } = h2ToH1Response(h);
    headSent = true;
    hooks.onResponse(status, grpcStatusOf(h));
    res.writeHead(status, rh);
    up.pipe(res);
  });
  up.on('end', () => {
    if (!finished) {
      finished = true;
      hooks.onEnd(false);
    }
  });
  up.on('error', (err) => {
    if (finished) return;
    finished = true;
    if (!headSent) hooks.onError(err);
    else {
      hooks.onEnd(true);
      res.destroy(err);
    }
  });
  if (hasBody) req.pipe(up);
  res.on('close', () => {
    if (!res.writableFinished && !up.destroyed) up.close(h2c.NGHTTP2_CANCEL);
  });
  return () => {
    if (!up.destroyed) up.close(h2c.NGHTTP2_CANCEL);
  };
}

/** HTTP/1 downstream → HTTP/1 upstream (keep-alive pool). */
export function h1ToH1(
  req: IncomingMessage,
  res: ServerResponse,
  target: { host: string; port: number; agent: Agent; headers?: OutgoingHttpHeaders; timeoutMs?: number },
  hooks: ExchangeHooks,
): Cancel {
  const headers: OutgoingHttpHeaders = { ...req.headers, ...target.headers };
  delete headers.connection;
  delete headers['keep-alive'];
  delete headers['proxy-connection'];
  let headSent = false;
  let finished = false;
  let retries = 0;
  // A request without a body needs no pipe (its listeners cost more than the exchange's own work).
  const bodiless = hasNoBody(req);
  const options = {
    host: target.host,
    port: target.port,
    method: req.method,
    path: req.url,
    headers,
    agent: target.agent,
    timeout: target.timeoutMs,
  };
  const onResponse = (ur: IncomingMessage): void => {
    headSent = true;
    const status = ur.statusCode ?? 502;
    hooks.onResponse(status, undefined);
    const rh = { ...ur.headers };
    delete rh.connection;
    delete rh['keep-alive'];
    res.writeHead(status, rh);
    ur.pipe(res);
    ur.on('end', () => {
      if (!finished) {
        finished = true;
        hooks.onEnd(false);
      }
    });
    ur.on('error', (err) => {
      if (finished) return;
      finished = true;
      hooks.onEnd(true);
      res.destroy(err);
    });
  };
  const onError = (err: NodeJS.ErrnoException): void => {
    if (finished) return;
    if (bodiless && !headSent && isStaleKeepAlive(up, err) && retries++ < MAX_STALE_RETRIES) {
      up = resend(options, onResponse, onError);
      return;
    }
    finished = true;
    if (!headSent) hooks.onError(err);
    else {
      hooks.onEnd(true);
      res.destroy(err);
    }
  };
  let up = h1request(options, onResponse);
  up.on('error', onError);
  if (bodiless) {
    req.resume();
    up.end();
  } else req.pipe(up);
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  return () => up.destroy();
}

/** HTTP/2 downstream stream → HTTP/2 upstream session (gRPC, h2), trailers intact. */
export function h2ToH2(
  stream: ServerHttp2Stream,
  headers: H2Headers,
  session: ClientHttp2Session,
  extra: Record<string, string>,
  hooks: ExchangeHooks,
): Cancel {
  const out = h2ToH2Request(headers, extra);
  let up;
  try {
    up = session.request(out, stream.endAfterHeaders ? H2_REQUEST.end : H2_REQUEST.body);
  } catch (err) {
    hooks.onError(err as Error);
    return NO_CANCEL;
  }
  let headSent = false;
  let finished = false;
  let trailers: H2Headers | undefined;
  up.on('response', (h, flags) => {
    headSent = true;
    const grpc = grpcStatusOf(h);
    if (stream.destroyed) return;
    if ((flags ?? 0) & h2c.NGHTTP2_FLAG_END_STREAM) {
      hooks.onResponse(Number(h[':status'] ?? 200), grpc);
      stream.respond(h2ToH2Response(h), { endStream: true });
      finished = true;
      hooks.onEnd(false);
      return;
    }
    stream.respond(h2ToH2Response(h), { waitForTrailers: true });
    hooks.onResponse(Number(h[':status'] ?? 200), grpc);
    copyBodyToH2(up, stream);
  });
  up.on('trailers', (t) => {
    trailers = t;
  });
  stream.on('wantTrailers', () => {
    if (trailers) stream.sendTrailers(cleanTrailers(trailers));
    else stream.close();
  });
  up.on('end', () => {
    if (finished) return;
    finished = true;
    hooks.onEnd(false);
  });
  up.on('error', (err) => {
    if (finished) return;
    finished = true;
    if (!headSent) hooks.onError(err);
    else {
      hooks.onEnd(true);
      stream.close(h2c.NGHTTP2_INTERNAL_ERROR);
    }
  });
  if (!stream.endAfterHeaders) stream.pipe(up);
  stream.on('close', () => {
    if (!up.destroyed && !up.closed && stream.rstCode !== undefined && stream.rstCode !== h2c.NGHTTP2_NO_ERROR)
      up.close(h2c.NGHTTP2_CANCEL);
  });
  return () => {
    if (!up.destroyed && !up.closed) up.close(h2c.NGHTTP2_CANCEL);
  };
}

/** HTTP/2 downstream stream carrying an upgraded HTTP/1 request → HTTP/1 upstream (inbound, to the app). */
export function h2ToH1(
  stream: ServerHttp2Stream,
  headers: H2Headers,
  target: { host: string; port: number; agent: Agent; extra?: Record<string, string> },
  hooks: ExchangeHooks,
): Cancel {
  const out = h2ToH1Request(headers, target.extra);
  let headSent = false;
  let finished = false;
  let retries = 0;
  const bodiless = stream.endAfterHeaders;
  const options = {
    host: target.host,
    port: target.port,
    method: String(headers[':method'] ?? 'GET'),
    path: String(headers[':path'] ?? '/'),
    headers: out,
    agent: target.agent,
  };
  const onResponse = (ur: IncomingMessage): void => {
    headSent = true;
    const status = ur.statusCode ?? 502;
    hooks.onResponse(status, undefined);
    if (stream.destroyed) {
      ur.resume();
      return;
    }
    stream.respond(h1ToH2Response(status, ur.headers));
    copyBodyToH2(ur, stream);
    ur.on('end', () => {
      if (!finished) {
        finished = true;
        hooks.onEnd(false);
      }
    });
    ur.on('error', () => {
      if (finished) return;
      finished = true;
      hooks.onEnd(true);
      stream.close(h2c.NGHTTP2_INTERNAL_ERROR);
    });
  };
  const onError = (err: NodeJS.ErrnoException): void => {
    if (finished) return;
    if (bodiless && !headSent && isStaleKeepAlive(up, err) && retries++ < MAX_STALE_RETRIES) {
      up = resend(options, onResponse, onError);
      return;
    }
    finished = true;
    if (!headSent) hooks.onError(err);
    else {
      hooks.onEnd(true);
      stream.close(h2c.NGHTTP2_INTERNAL_ERROR);
    }
  };
  let up = h1request(options, onResponse);
  up.on('error', onError);
  if (bodiless) {
    stream.resume();
    up.end();
  } else stream.pipe(up);
  stream.on('close', () => {
    if (!finished) up.destroy();
  });
  return () => up.destroy();
}
