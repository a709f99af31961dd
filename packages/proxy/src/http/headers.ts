// Header conversions between HTTP/1 and HTTP/2 for a proxy: hop-by-hop headers never cross a hop,
// and HTTP/1 requests riding HTTP/2 between proxies carry their original protocol in a marker header.
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { IncomingHttpHeaders as H2Headers } from 'node:http2';

/** Linkerd's marker: an HTTP/1 request upgraded to HTTP/2 between proxies; the far side restores HTTP/1. */
export const ORIG_PROTO_HEADER = 'l5d-orig-proto';
export const ORIG_PROTO_HTTP11 = 'HTTP/1.1';
/** The client's mesh identity, added by the inbound proxy after mTLS (Linkerd's l5d-client-id). */
export const CLIENT_ID_HEADER = 'l5d-client-id';
/** The prefix of the headers minimesh itself sets (x-minimesh-proxy-error, ...). */
export const MESH_HEADER_PREFIX = 'x-minimesh-';

/**
 * A request header only the mesh may set: l5d-client-id and x-minimesh-*. The inbound proxy drops a
 * client's own before the app sees the request (names are lower case, as Node gives them).
 */
export function isMeshRequestHeader(name: string): boolean {
  return name === CLIENT_ID_HEADER || name.startsWith(MESH_HEADER_PREFIX);
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'http2-settings',
  'host',
]);

/**
 * Copies `headers` into `out` without pseudo-headers and hop-by-hop headers (and those the Connection
 * header names). Hot path: one pass with for..in, no intermediate objects unless Connection names some.
 */
function copyEndToEnd<T extends Record<string, unknown>>(
  headers: IncomingHttpHeaders | H2Headers,
  out: T,
  keepTe = false,
): T {
  const conn = headers.connection;
  let named: Set<string> | undefined;
  if (typeof conn === 'string') {
    named = new Set();
    for (const n of conn.split(',')) named.add(n.trim().toLowerCase());
  }
  const o = out as Record<string, unknown>;
  for (const k in headers) {
    const v = headers[k];
    if (v === undefined || k.charCodeAt(0) === 58 /* ':' */) continue;
    if (HOP_BY_HOP.has(k) || named?.has(k)) {
      if (!(keepTe && k === 'te' && v === 'trailers')) continue;
    }
    o[k] = v;
  }
  return out;
}

function addExtra(out: Record<string, unknown>, extra: Record<string, string> | undefined): void {
  if (extra) for (const k in extra) out[k] = extra[k];
}

/**
 * HTTP/1 request headers → HTTP/1 request headers for the next hop: the caller's as they came, `extra`
 * added, without the connection-level ones (the upstream connection is the pool's, kept alive).
 */
export function h1ToH1Request(headers: IncomingHttpHeaders, extra: Record<string, string>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ...headers, ...extra };
  delete out.connection;
  delete out['keep-alive'];
  delete out['proxy-connection'];
  return out;
}

/** HTTP/1 response headers → HTTP/1 response headers for the caller (whose connection is its own). */
export function h1ToH1Response(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ...headers };
  delete out.connection;
  delete out['keep-alive'];
  return out;
}

/**
 * HTTP/1 request headers → HTTP/2 request headers (for the multiplexed connection between proxies).
 * Host is kept beside :authority (RFC 9113 §8.3.1 lets an intermediary retain it): Linkerd's inbound
 * proxy restores HTTP/1 from the request as it came, without rebuilding Host from :authority, so an
 * upgraded request without Host reached the app without one (HTTP 400 from most servers).
 */
export function h1ToH2Request(
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  authority: string,
  extra: Record<string, string> = {},
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = copyEndToEnd(headers, {});
  if (headers.host !== undefined) out.host = headers.host;
  out[':method'] = method;
  out[':path'] = path;
  out[':authority'] = authority;
  out[':scheme'] = 'http';
  addExtra(out, extra);
  return out;
}

/** HTTP/2 request headers → HTTP/1 request headers (restoring Host from :authority). */
export function h2ToH1Request(headers: H2Headers, extra: Record<string, string> = {}): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = copyEndToEnd(headers, {});
  addExtra(out, extra);
  delete out[ORIG_PROTO_HEADER];
  const authority = headers[':authority'] ?? headers.host;
  if (authority) out.host = authority;
  return out;
}

/** HTTP/2 request headers → HTTP/2 request headers for the next hop. */
export function h2ToH2Request(headers: H2Headers, extra: Record<string, string> = {}): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = copyEndToEnd(headers, {}, true);
  addExtra(out, extra);
  for (const p of [':method', ':path', ':authority', ':scheme']) if (headers[p] !== undefined) out[p] = headers[p];
  return out;
}

/** HTTP/1 response headers → HTTP/2 response headers. */
export function h1ToH2Response(status: number, headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = copyEndToEnd(headers, {});
  out[':status'] = status;
  return out;
}

/** HTTP/2 response headers → HTTP/1 response headers (status separately). */
export function h2ToH1Response(headers: H2Headers): { status: number; headers: OutgoingHttpHeaders } {
  return { status: Number(headers[':status'] ?? 502), headers: copyEndToEnd(headers, {}) };
}

/** HTTP/2 response headers → HTTP/2 response headers for the previous hop. */
export function h2ToH2Response(headers: H2Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = copyEndToEnd(headers, {});
  out[':status'] = headers[':status'] ?? 502;
  return out;
}

/** Trailers without pseudo or hop-by-hop fields. */
export function cleanTrailers(trailers: H2Headers | IncomingHttpHeaders): OutgoingHttpHeaders {
  return copyEndToEnd(trailers, {});
}

/**
 * The head of an HTTP/1 request as it arrived (raw names, order and bytes), to replay an Upgrade
 * (WebSocket) upstream before relaying raw bytes; `omit` drops the headers it matches, `extra` adds.
 */
export function requestHead(
  req: Pick<IncomingMessage, 'method' | 'url' | 'httpVersion' | 'rawHeaders'>,
  omit?: (lowerCaseName: string) => boolean,
  extra?: Record<string, string>,
): Buffer {
  let head = `${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (omit !== undefined && omit((raw[i] ?? '').toLowerCase())) continue;
    head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  }
  if (extra) for (const k in extra) head += `${k}: ${extra[k]}\r\n`;
  // latin1: the parser decoded the header bytes as latin1, so this gives back the same bytes.
  return Buffer.from(`${head}\r\n`, 'latin1');
}
