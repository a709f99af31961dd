// Outbound backend: RouteTarget → Concrete, the backend a request (each retry attempt again) goes to.
// A route rule's backends are picked at random by weight (linkerd2-proxy's RandomAvailable
// distribution): a 0-weight backend gets nothing, and as the policy streams new weights the next
// request reads them (the rule is the policy's current one). Each backend is its own Concrete, balanced
// on its own over the endpoints Destination.Get sends for its authority (destination/discovery.ts);
// the Logical's own Service is its own Concrete. A backend with a failure injector (an unreachable
// backendRef) answers its share with the injected status; a backend's own filters (header edits) are
// applied here. Without a rule (no policy, no route) the Logical's Concrete serves.
import type { CompiledBackend, CompiledOutboundRule } from '@minimesh/policy/client';
import type { Discovery } from '../destination/discovery.js';
import { ProxyError, RouteAnswer } from '../errors.js';
import type { HttpRequest } from '../http/exchange.js';
import type { Layer, RequestHandler } from '../layers.js';
import { plainEndpoint, type Concrete, type Logical, type RouteTarget } from '../targets.js';
import { applyFilters, editHeaders, responseEditor } from './filters.js';

export interface BackendOptions {
  /** Where a backend's endpoints come from; undefined: every backend is the Logical's own Concrete. */
  discovery: Pick<Discovery, 'httpNow' | 'http'> | undefined;
  /** [0, 1): which backend a request takes (a seam for tests). */
  random?: () => number;
}

/** The backend of `backends` a uniform `r` in [0, 1) picks by weight; undefined when all weigh 0. */
export function pickWeighted<B extends { weight: number }>(backends: readonly B[], r: number): B | undefined {
  if (backends.length === 1) return backends[0]!.weight > 0 ? backends[0] : undefined;
  let total = 0;
  for (const b of backends) total += b.weight;
  if (total <= 0) return undefined;
  let x = r * total;
  for (const b of backends) {
    if (b.weight <= 0) continue;
    if (x < b.weight) return b;
    x -= b.weight;
  }
  // Rounding: the last backend with weight.
  for (let i = backends.length - 1; i >= 0; i--) if (backends[i]!.weight > 0) return backends[i];
  return undefined;
}

export function pushBackend<R extends HttpRequest>(
  opts: BackendOptions = { discovery: undefined },
): Layer<RequestHandler<Concrete, R>, RequestHandler<RouteTarget, R>> {
  const { discovery } = opts;
  const random = opts.random ?? Math.random;
  const forwards = new WeakMap<CompiledBackend, Concrete>();
  return (next) => (target, req) => {
    const rule = target.rule;
    if (rule === undefined || rule.backends.length === 0 || discovery === undefined)
      return next(target.logical.concrete, req);
    const backend = pickWeighted(rule.backends, random());
    if (backend === undefined)
      return fail(req, 500, 13, `route ${target.logical.authority}: every backend has weight 0`);
    req.exchange?.routeStats?.backend(backend);
    if (backend.kind === 'fail') return fail(req, backend.status, backend.status, backend.message, rule.grpc);
    if (backend.filters.length > 0 && req.exchange !== undefined) {
      const ex = req.exchange;
      // A retry's attempt goes through here again: set/remove are idempotent, add is applied once.
      if (req === (ex as unknown)) {
        const v = applyFilters(backend.filters, ex, rule.prefixes);
        if (v.kind === 'redirect') return ex.answer(v.status, 'redirected', v.location);
        if (v.response.length > 0) {
          const before = ex.editResponse;
          const edit = responseEditor(v.response);
          ex.editResponse = before === undefined ? edit : (h) => (before(h), edit(h));
        }
      } else
        for (const f of backend.filters)
          if (f.kind === 'requestHeaders') editHeaders(ex.headers, { ...f.edit, add: [] });
    }
    if (backend.kind === 'forward') {
      let c = forwards.get(backend);
      if (c === undefined) {
        const { ip, port } = backend.addr;
        const endpoint = plainEndpoint(ip, port);
        forwards.set(backend, (c = { kind: 'forward', authority: endpoint.key, endpoint }));
      }
      return next(c, req);
    }
    const logical = target.logical;
    if (backend.authority === logical.authority) return next(logical.concrete, req);
    const known = discovery.httpNow(backend.authority, undefined);
    if (known !== undefined) return next(known.concrete, req);
    // A retry's attempt is routed at once or not at all (the route stage waited for discovery first).
    if (req.exchange !== undefined && (req.exchange as unknown) !== req) {
      discovery.http(backend.authority, undefined).catch(() => undefined);
      return req.reject(
        new ProxyError('MINIMESH_PROXY_NO_ENDPOINTS', `backend ${backend.authority}: destination has not answered yet`),
      );
    }
    discovery.http(backend.authority, undefined).then(
      (l) => next(l.concrete, req),
      (err: unknown) => req.reject(err),
    );
  };
}

/** A backend (or a distribution) that answers with a failure: the injected status. */
function fail(req: HttpRequest, status: number, grpcStatus: number, message: string, grpc = false): void {
  const ex = req.exchange;
  // The caller's own exchange answers as the route says; a retry's attempt can only be refused (with
  // the same answer).
  if (ex !== undefined && (ex as unknown) === req) {
    if (grpc) return ex.answer(500, message, undefined, grpcStatus);
    return ex.answer(status, message, undefined);
  }
  req.reject(new RouteAnswer(grpc ? 500 : status, grpcStatus, message));
}

/**
 * Undefined when every balancer backend of `rule` is known to discovery (its Concrete is at hand),
 * else a promise settled once destination answered for each: the route stage waits for it before it
 * sends a request with retries, whose attempts must be routed at once.
 */
export function backendsReady(
  discovery: Pick<Discovery, 'httpNow' | 'http'> | undefined,
  rule: CompiledOutboundRule,
  logical: Logical,
): Promise<unknown> | undefined {
  if (discovery === undefined) return undefined;
  let waits: Array<Promise<unknown>> | undefined;
  for (const b of rule.backends) {
    if (b.kind !== 'balancer' || b.weight <= 0 || b.authority === logical.authority) continue;
    if (discovery.httpNow(b.authority, undefined) !== undefined) continue;
    (waits ??= []).push(discovery.http(b.authority, undefined));
  }
  return waits && Promise.allSettled(waits);
}
