// The one module that writes the proxy's own answers on the wire, in the caller's protocol, whichever
// stage gave them: a proxy error (errors.ts) as an HTTP status + x-minimesh-proxy-error, a gRPC status (a
// trailers-only response), an Upgrade's error response or a TCP reset; a route's answer (a redirect, an
// injected failure); a request the HTTP/1 server could not read. (The tap server's gRPC statuses and the admin
// server's pages are those servers' own API, not answers to proxied traffic.)
import type { CallerStream } from './http/h2-engine.js';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { ProxyError, RouteAnswer, type ProxyErrorCode } from './errors.js';
import type { H1Answer } from './http/h1-wire.js';

export const ERROR_HEADER = 'x-minimesh-proxy-error';

export interface HttpErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const HTTP_STATUS: Record<ProxyErrorCode, number> = {
  MINIMESH_PROXY_NO_ENDPOINTS: 503,
  MINIMESH_PROXY_CONNECT_REFUSED: 502,
  MINIMESH_PROXY_CONNECT_TIMEOUT: 504,
  MINIMESH_PROXY_PEER_IDENTITY_MISMATCH: 502,
  MINIMESH_PROXY_TLS_FAILED: 502,
  MINIMESH_PROXY_UPSTREAM_FAILED: 502,
  MINIMESH_PROXY_RESPONSE_TIMEOUT: 504,
  MINIMESH_PROXY_LOOP: 502,
  MINIMESH_PROXY_NO_ORIGINAL_DST: 502,
  MINIMESH_PROXY_NOT_READY: 503,
  MINIMESH_PROXY_IDENTITY_FAILED: 503,
  MINIMESH_PROXY_UNAUTHORIZED: 403,
  MINIMESH_PROXY_ROUTE_NOT_FOUND: 404,
  MINIMESH_PROXY_INVALID_POLICY: 500,
  MINIMESH_PROXY_REQUEST_TIMEOUT: 504,
  MINIMESH_PROXY_RATE_LIMITED: 429,
  MINIMESH_PROXY_FORBIDDEN: 403,
  MINIMESH_PROXY_MALFORMED_REQUEST: 400,
};

/** gRPC status codes: UNAVAILABLE 14, DEADLINE_EXCEEDED 4, UNAUTHENTICATED 16, INTERNAL 13 (also HTTP 400, as gRPC maps it), PERMISSION_DENIED 7, NOT_FOUND 5, RESOURCE_EXHAUSTED 8. */
const GRPC_STATUS: Record<ProxyErrorCode, number> = {
  MINIMESH_PROXY_NO_ENDPOINTS: 14,
  MINIMESH_PROXY_CONNECT_REFUSED: 14,
  MINIMESH_PROXY_CONNECT_TIMEOUT: 4,
  MINIMESH_PROXY_PEER_IDENTITY_MISMATCH: 16,
  MINIMESH_PROXY_TLS_FAILED: 14,
  MINIMESH_PROXY_UPSTREAM_FAILED: 14,
  MINIMESH_PROXY_RESPONSE_TIMEOUT: 4,
  MINIMESH_PROXY_LOOP: 13,
  MINIMESH_PROXY_NO_ORIGINAL_DST: 13,
  MINIMESH_PROXY_NOT_READY: 14,
  MINIMESH_PROXY_IDENTITY_FAILED: 14,
  MINIMESH_PROXY_UNAUTHORIZED: 7,
  MINIMESH_PROXY_ROUTE_NOT_FOUND: 5,
  MINIMESH_PROXY_INVALID_POLICY: 13,
  MINIMESH_PROXY_REQUEST_TIMEOUT: 4,
  MINIMESH_PROXY_RATE_LIMITED: 8,
  MINIMESH_PROXY_FORBIDDEN: 7,
  MINIMESH_PROXY_MALFORMED_REQUEST: 13,
};

/**
 * The gRPC status a gRPC client reads from an HTTP status that came without one (gRPC's "HTTP to gRPC
 * Status Code Mapping", doc/http-grpc-status-mapping.md in grpc/grpc): what a gRPC request gets when an
 * HTTP rule answers it, e.g. a Deny EgressNetwork's 403 "traffic not allowed" → PERMISSION_DENIED.
 */
export function grpcStatusOfHttp(status: number): number {
  switch (status) {
    case 400:
      return 13;
    case 401:
      return 16;
    case 403:
      return 7;
    case 404:
      return 12;
    case 429:
    case 502:
    case 503:
    case 504:
      return 14;
    default:
      return 2;
  }
}

function asProxyError(err: unknown): ProxyError {
  return err instanceof ProxyError
    ? err
    : new ProxyError('MINIMESH_PROXY_UPSTREAM_FAILED', (err as Error)?.message ?? String(err), { cause: err });
}

/** The short, header-safe reason, e.g. "MINIMESH_PROXY_CONNECT_REFUSED: endpoint 10.0.0.1:80: connection refused". */
function reason(e: ProxyError): string {
  return `${e.code}: ${e.message}`.replace(/[^\x20-\x7e]/g, '?').slice(0, 512);
}

export function toHttpErrorResponse(err: unknown): HttpErrorResponse {
  const e = asProxyError(err);
  // A rate-limited request leaves the connection open (linkerd2-proxy's rate_limited response) and says
  // when to come back.
  const headers: Record<string, string> =
    e.retryAfterSeconds !== undefined
      ? { [ERROR_HEADER]: reason(e), 'content-type': 'text/plain', 'retry-after': String(e.retryAfterSeconds) }
      : { [ERROR_HEADER]: reason(e), 'content-type': 'text/plain', connection: 'close' };
  return { status: HTTP_STATUS[e.code], headers, body: `${reason(e)}\n` };
}

/** Headers of a gRPC trailers-only response (HTTP 200 with grpc-status in the only HEADERS frame). */
export function toGrpcErrorHeaders(err: unknown): Record<string, string | number> {
  const e = asProxyError(err);
  return {
    ':status': 200,
    'content-type': 'application/grpc',
    'grpc-status': GRPC_STATUS[e.code],
    'grpc-message': encodeURIComponent(reason(e)),
    [ERROR_HEADER]: reason(e),
  };
}

/** Headers of an HTTP/2 error response for non-gRPC streams. */
export function toH2ErrorHeaders(err: unknown): Record<string, string | number> {
  const r = toHttpErrorResponse(err);
  const retryAfter = r.headers['retry-after'];
  return {
    ':status': r.status,
    [ERROR_HEADER]: r.headers[ERROR_HEADER] as string,
    'content-type': 'text/plain',
    ...(retryAfter !== undefined ? { 'retry-after': retryAfter } : {}),
  };
}

export function isGrpc(contentType: string | string[] | undefined): boolean {
  const v = Array.isArray(contentType) ? contentType[0] : contentType;
  return typeof v === 'string' && v.startsWith('application/grpc');
}

/** Answers an HTTP/1 request with the error (or cuts the response when its head already left). */
export function respondH1(res: H1Answer, err: unknown): void {
  if (res.headersSent) return void res.destroy();
  if (err instanceof RouteAnswer) return answerH1(res, err.status, err.message, undefined);
  const r = toHttpErrorResponse(err);
  res.writeHead(r.status, r.headers).end(r.body);
}

/** Answers an HTTP/2 stream with the error: a gRPC status for gRPC, an HTTP status otherwise. */
export function respondH2(stream: CallerStream, grpc: boolean, err: unknown): void {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) return void stream.close(0x2 /* INTERNAL_ERROR */);
  if (err instanceof RouteAnswer)
    return grpc
      ? answerGrpc(stream, err.grpcStatus, err.message)
      : answerH2(stream, err.status, err.message, undefined);
  try {
    stream.respond(grpc ? toGrpcErrorHeaders(err) : toH2ErrorHeaders(err), { endStream: true });
  } catch {
    stream.destroy();
  }
}

/** Answers an HTTP/1 Upgrade (whose socket the HTTP server let go) with the error, then closes it. */
export function respondUpgrade(socket: Socket, err: unknown): void {
  if (socket.destroyed) return;
  const r = toHttpErrorResponse(err);
  let head = `HTTP/1.1 ${r.status} Proxy Error\r\n`;
  for (const k in r.headers) head += `${k}: ${r.headers[k]}\r\n`;
  socket.end(`${head}content-length: ${Buffer.byteLength(r.body)}\r\n\r\n${r.body}`);
}

/** A route's own answer to an HTTP/1 caller (a redirect, an injected failure): `status`, and why. */
export function answerH1(res: H1Answer, status: number, message: string, location: string | undefined): void {
  const headers: Record<string, string> = { 'content-type': 'text/plain', [ERROR_HEADER]: message };
  if (location) headers.location = location;
  res.writeHead(status, headers).end(`${message}\n`);
}

/** A route's own answer to an HTTP/2 caller. */
export function answerH2(stream: CallerStream, status: number, message: string, location: string | undefined): void {
  if (stream.destroyed || stream.headersSent) return;
  const headers: Record<string, string | number> = { ':status': status, [ERROR_HEADER]: message };
  if (location) headers.location = location;
  stream.respond(headers, { endStream: true });
}

/** A gRPC route's own answer (an injected failure): a trailers-only response with that gRPC status. */
export function answerGrpc(stream: CallerStream, grpcStatus: number, message: string): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': grpcStatus,
      'grpc-message': encodeURIComponent(message),
      [ERROR_HEADER]: message.replace(/[^\x20-\x7e]/g, '?').slice(0, 512),
    },
    { endStream: true },
  );
}

/**
 * A request Node's strict HTTP/1 parser refused (smuggling shapes: Content-Length with
 * Transfer-Encoding, obs-fold, a bare CR, a pseudo-header; or headers over the size limit), or one
 * whose headers did not arrive within the header read timeout: answer 400, 431 or 408 and close, as
 * Node does without a handler, instead of a silent reset. Nothing was forwarded. A socket `busy` with
 * answers to earlier requests (the HTTP/1 server knows) is only closed.
 */
export function respondBadRequest(err: NodeJS.ErrnoException, socket: Socket, busy: boolean): void {
  if (err.code === 'ECONNRESET' || !socket.writable || busy) return void socket.destroy();
  const status =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? '431 Request Header Fields Too Large'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? '408 Request Timeout'
        : '400 Bad Request';
  const reason =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? 'request headers not received within the header read timeout'
      : `invalid HTTP/1 request (${err.code ?? 'parse error'})`;
  socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n${ERROR_HEADER}: ${reason}\r\n\r\n`);
  socket.destroySoon?.();
}

/** Raw TCP has no error message: reset the connection (RST) so the client sees the failure at once. */
export function resetSocket(socket: Socket): void {
  // A TLS socket cannot be reset (Node throws "This handle type cannot be sent"): close it.
  if (typeof socket.resetAndDestroy === 'function' && !socket.destroyed && !(socket instanceof TLSSocket))
    socket.resetAndDestroy();
  else socket.destroy();
}

export function errorCode(err: unknown): string {
  return err instanceof ProxyError ? err.code : 'MINIMESH_PROXY_UPSTREAM_FAILED';
}
