// What a tap asks each proxy for: Linkerd's tap filters (--to, --method, --path, --authority) as an
// ObserveRequest match, and a limit on the number of requests. Pure.
import type { tap } from '@minimesh/proto';
import { outboundLabel, type Resource } from './resource.js';
import { toHttpMethod } from './tap-record.js';

export interface TapFilter {
  /** Only requests the tapped pods send to this resource (outbound). */
  to?: Resource;
  method?: string;
  /** A path prefix. */
  path?: string;
  /** An exact :authority (Host). */
  authority?: string;
  /** How many requests each proxy reports before it ends the stream (Linkerd's default: 100 per second of max-rps). */
  limit: number;
  /** Also ask for the request and response headers. */
  headers?: boolean;
}

export class TapFilterError extends Error {
  readonly code = 'MINIMESH_VIZ_BAD_TAP_FILTER';
}

export function toObserveRequest(f: TapFilter): tap.ObserveRequest {
  if (!Number.isInteger(f.limit) || f.limit < 1 || f.limit > 100_000)
    throw new TapFilterError(`limit ${f.limit} is not valid: expected a whole number from 1 to 100000`);
  if (f.path !== undefined && !f.path.startsWith('/'))
    throw new TapFilterError(`path "${f.path}" is not valid: expected a path prefix starting with "/"`);
  if (f.method !== undefined && !/^[A-Za-z]+$/.test(f.method))
    throw new TapFilterError(`method "${f.method}" is not valid: expected an HTTP method such as GET or POST`);
  const all: tap.ObserveRequest_Match[] = [];
  const label = (key: string, value: string): tap.ObserveRequest_Match => ({
    match: { $case: 'destinationLabel', value: { key, value } },
  });
  if (f.to) {
    // Outbound events carry destination's metric labels for the endpoint (namespace, deployment, pod, ...).
    if (f.to.kind === 'namespace') all.push(label('namespace', f.to.name || f.to.namespace));
    else {
      if (f.to.namespace !== '') all.push(label('namespace', f.to.namespace));
      if (f.to.name !== '') all.push(label(outboundLabel(f.to.kind).replace(/^dst_/, ''), f.to.name));
    }
  }
  const http = (m: tap.ObserveRequest_Match_Http['match']): tap.ObserveRequest_Match => ({
    match: { $case: 'http', value: { match: m } },
  });
  if (f.method) all.push(http({ $case: 'method', value: toHttpMethod(f.method) }));
  if (f.path) all.push(http({ $case: 'path', value: { match: { $case: 'prefix', value: f.path } } }));
  if (f.authority) all.push(http({ $case: 'authority', value: { match: { $case: 'exact', value: f.authority } } }));
  const req: tap.ObserveRequest = { limit: f.limit };
  if (all.length > 0) req.match = { match: { $case: 'all', value: { matches: all } } };
  if (f.headers) req.extract = { extract: { $case: 'http', value: { extract: { $case: 'headers', value: {} } } } };
  return req;
}
