// The authorization layer as the inbound stack calls it: from the stack's targets (InboundConn, an
// HttpExchange, an Upgrade request) to InboundAuthz and back, answering what is not allowed. Kept
// apart so the stack itself only gains three calls.
import type { IncomingMessage } from 'node:http';
import { ProxyError } from '../errors.js';
import { H1Exchange, H2Exchange, type HttpExchange } from '../http/exchange.js';
import type { InboundConn } from '../targets.js';
import type { AuthzConn, InboundAuthz, RequestVerdict } from './inbound-authz.js';
import { applyRequestFilters } from './inbound-authz.js';

const conns = new WeakMap<InboundConn, AuthzConn>();

/** The authorization view of a connection (made once per connection). */
export function authzConnOf(conn: InboundConn): AuthzConn {
  let a = conns.get(conn);
  if (!a) {
    a = {
      targetAddr: conn.orig.key,
      targetIp: conn.orig.ip,
      targetPort: conn.orig.port,
      tls: conn.tls,
      clientId: conn.clientId,
      clientIp: conn.clientIp,
    };
    conns.set(conn, a);
  }
  return a;
}

/** Whether the port's policy makes it opaque (or TLS): no protocol detection, connection-level authorization. */
export function policyIsOpaque(authz: InboundAuthz, port: number): boolean {
  const p = authz.policy(port).protocol;
  return p === 'opaque' || p === 'tls';
}

function verdictError(v: Extract<RequestVerdict, { kind: 'respond' }>): ProxyError {
  if (v.status === 403) return new ProxyError('MINIMESH_PROXY_UNAUTHORIZED', v.message);
  if (v.status === 404) return new ProxyError('MINIMESH_PROXY_ROUTE_NOT_FOUND', v.message);
  return new ProxyError('MINIMESH_PROXY_INVALID_POLICY', v.message);
}

/**
 * Checks one request. True: forward it (route filters applied to its headers). False: it was answered
 * (403, 404, 500 through the error responders; a redirect or an injected failure as its route says).
 */
export function authorizeExchange(authz: InboundAuthz, conn: InboundConn, ex: HttpExchange): boolean {
  const h1 = ex instanceof H1Exchange;
  const method = h1 ? (ex.req.method ?? 'GET') : String(ex.headers[':method'] ?? 'GET');
  const path = h1 ? (ex.req.url ?? '/') : String(ex.headers[':path'] ?? '/');
  const headers = ex.headers;
  const v = authz.checkRequest(authzConnOf(conn), {
    method,
    path,
    authority: ex.authority,
    header: (n) => {
      const x = headers[n];
      return Array.isArray(x) ? x.join(',') : x;
    },
  });
  const answer = v.kind === 'allow' ? applyRequestFilters(v.filters, { authority: ex.authority, path, headers }) : v;
  if (!answer) return true;
  if (answer.kind !== 'respond') return true;
  if (answer.status === 403 || answer.status === 404 || (answer.status === 500 && !answer.location)) {
    ex.fail(verdictError(answer));
    return false;
  }
  respondWith(ex, answer.status, answer.location, answer.message);
  return false;
}

/** A redirect or an injected failure: the status the route asks for. */
export function respondWith(ex: HttpExchange, status: number, location: string | undefined, message: string): void {
  if (ex instanceof H1Exchange) {
    const headers: Record<string, string> = { 'content-type': 'text/plain', 'x-minimesh-proxy-error': message };
    if (location) headers.location = location;
    ex.res.writeHead(status, headers).end(`${message}\n`);
    return;
  }
  if (!(ex instanceof H2Exchange)) return;
  const stream = ex.stream;
  if (stream.destroyed || stream.headersSent) return;
  const headers: Record<string, string | number> = { ':status': status, 'x-minimesh-proxy-error': message };
  if (location) headers.location = location;
  stream.respond(headers, { endStream: true });
}

/** Checks an HTTP/1 Upgrade (WebSocket) request; undefined: allowed, else the error to answer it with. */
export function authorizeUpgrade(authz: InboundAuthz, conn: InboundConn, req: IncomingMessage): ProxyError | undefined {
  const v = authz.checkRequest(authzConnOf(conn), {
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    authority: req.headers.host,
    header: (n) => {
      const x = req.headers[n];
      return Array.isArray(x) ? x.join(',') : x;
    },
  });
  return v.kind === 'allow' ? undefined : verdictError(v);
}
