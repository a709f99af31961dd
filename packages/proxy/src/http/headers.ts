// Header conversions between HTTP/1 and HTTP/2 for a proxy: hop-by-hop headers never cross a hop,
// and HTTP/1 requests riding HTTP/2 between proxies carry their original protocol in a marker header.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { IncomingHttpHeaders as H2Headers } from 'node:http2';

/** Linkerd's marker: an HTTP/1 request upgraded to HTTP/2 between proxies; the far side restores HTTP/1. */
export const ORIG_PROTO_HEADER = 'l5d-orig-proto';
export const ORIG_PROTO_HTTP11 = 'HTTP/1.1';
/** The client's mesh identity, added by the inbound proxy after mTLS (Linkerd's l5d-client-id). */
export const CLIENT_ID_HEADER = 'l5d-client-id';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'http2-settings', 'host']);

/** Removes hop-by-hop headers (and those the Connection header names). */
function stripHopByHop(headers: IncomingHttpHeaders | H2Headers, keepTe = false): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = new Set<string>();
  const conn = headers.connection;
  if (typeof conn === 'string') for (const n of conn.split(',')) named.add(n.trim().toLowerCase());
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || k.startsWith(':')) continue;
    if (HOP_BY_HOP.has(k) || named.has(k)) {
      if (!(keepTe && k === 'te' && v === 'trailers')) continue;
    }
    out[k] = v as string | string[];
  }
  return out;
}

/** HTTP/1 request headers → HTTP/2 request headers (for the multiplexed connection between proxies). */
export function h1ToH2Request(method: string, path: string, headers: IncomingHttpHeaders, authority: string, extra: Record<string, string> = {}): OutgoingHttpHeaders {
  return { ...stripHopByHop(headers), ':method': method, ':path': path, ':authority': authority, ':scheme': 'http', ...extra };
}

/** HTTP/2 request headers → HTTP/1 request headers (restoring Host from :authority). */
export function h2ToH1Request(headers: H2Headers, extra: Record<string, string> = {}): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ...stripHopByHop(headers), ...extra };
  delete out[ORIG_PROTO_HEADER];
  const authority = headers[':authority'] ?? headers.host;
  if (authority) out.host = authority;
  return out;
}

/** HTTP/2 request headers → HTTP/2 request headers for the next hop. */
export function h2ToH2Request(headers: H2Headers, extra: Record<string, string> = {}): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ...stripHopByHop(headers, true), ...extra };
  for (const p of [':method', ':path', ':authority', ':scheme']) if (headers[p] !== undefined) out[p] = headers[p];
  return out;
}

/** HTTP/1 response headers → HTTP/2 response headers. */
export function h1ToH2Response(status: number, headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  return { ...stripHopByHop(headers), ':status': status };
}

/** HTTP/2 response headers → HTTP/1 response headers (status separately). */
export function h2ToH1Response(headers: H2Headers): { status: number; headers: OutgoingHttpHeaders } {
  return { status: Number(headers[':status'] ?? 502), headers: stripHopByHop(headers) };
}

/** HTTP/2 response headers → HTTP/2 response headers for the previous hop. */
export function h2ToH2Response(headers: H2Headers): OutgoingHttpHeaders {
  return { ...stripHopByHop(headers), ':status': headers[':status'] ?? 502 };
}

/** Trailers without pseudo or hop-by-hop fields. */
export function cleanTrailers(trailers: H2Headers | IncomingHttpHeaders): OutgoingHttpHeaders {
  return stripHopByHop(trailers);
}
