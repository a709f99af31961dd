// Where the tap layer meets an HTTP exchange: what a tap sees of a request (method, path, authority,
// the peer that sent it, where it goes, the TLS and identity labels the stack already computed), and
// the response bytes, counted only for a tapped request.
import type { TapView } from './match.js';
import type { TapLayer, TappedRequest } from './tap.js';
import type { Downstream } from '../http/exchange.js';

/** What an exchange tells the tap layer (HttpExchange implements it). */
export interface TapSubject {
  readonly method: string;
  readonly path: string;
  readonly scheme: 'http' | 'https';
  readonly authority: string | undefined;
  /** The connection's remote end (the client, or the local app for outbound). */
  readonly peer: { ip: string; port: number };
  readonly headers: Record<string, string | string[] | undefined>;
  /** Where the response goes (an HTTP/1 ServerResponse or an HTTP/2 stream). */
  readonly downstream: Downstream;
}

/** "10.0.0.1:80" / "[fd00::1]:80" → address; undefined for anything else. */
export function parseAddr(text: string | undefined): { ip: string; port: number } | undefined {
  if (!text) return undefined;
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:]+):(\d+)$/.exec(text);
  return m ? { ip: m[1] ?? '', port: Number(m[2]) } : undefined;
}

const nonEmpty = (o: Record<string, string | undefined>): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(o)) if (v) out[k] = v;
  return out;
};

/**
 * Offers the request to the taps (call only when layer.active). `labels` are the stack's metric labels
 * for it: target_addr is where it goes (inbound: the original destination; outbound: the endpoint), tls
 * and client_id / server_id what mTLS said, dst_* what destination said about the endpoint.
 */
export function tapRequest(
  layer: TapLayer,
  direction: 'inbound' | 'outbound',
  ex: TapSubject,
  labels: Readonly<Record<string, string>>,
): TappedRequest | undefined {
  const destination = parseAddr(labels.target_addr) ?? { ip: '0.0.0.0', port: 0 };
  const dstLabels: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) if (k.startsWith('dst_') && v) dstLabels[k.slice(4)] = v;
  const view: TapView = {
    source: ex.peer,
    destination,
    destinationLabels: dstLabels,
    routeLabels: {},
    method: ex.method.toUpperCase(),
    scheme: ex.scheme,
    authority: ex.authority ?? '',
    path: ex.path,
  };
  const tls = labels.no_tls_reason ? labels.no_tls_reason : labels.tls;
  const req = layer.start(view, {
    direction,
    sourceLabels: direction === 'inbound' ? nonEmpty({ tls, client_id: labels.client_id }) : {},
    destinationLabels:
      direction === 'outbound' ? { ...dstLabels, ...nonEmpty({ tls, server_id: labels.server_id }) } : {},
    headers: () =>
      Object.entries(ex.headers).flatMap(([k, v]) =>
        v === undefined
          ? []
          : Array.isArray(v)
            ? v.map((x) => [k, x] as [string, string])
            : [[k, v] as [string, string]],
      ),
  });
  if (req) countBytes(ex.downstream, req);
  return req;
}

/** Counts what is written downstream, for this one tapped response (the stream's own write and end). */
function countBytes(w: Downstream, req: TappedRequest): void {
  const size = (chunk: unknown) =>
    typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk instanceof Uint8Array ? chunk.length : 0;
  const write = w.write;
  const end = w.end;
  w.write = function (this: Downstream, chunk: unknown, ...rest: unknown[]) {
    req.bytes += size(chunk);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as Downstream['write'];
  w.end = function (this: Downstream, chunk?: unknown, ...rest: unknown[]) {
    if (chunk !== undefined && typeof chunk !== 'function') req.bytes += size(chunk);
    return (end as (...a: unknown[]) => unknown).call(this, chunk, ...rest);
  } as Downstream['end'];
}
