// Outbound routes over the proxy API's form (outbound.OutboundPolicy), compiled once per update: the
// route and rule of a request, with its timeouts, retry policy and backends, as linkerd2-proxy applies
// them. minimesh-proxy's route layer and `minimesh explain` use it.
import type { outbound } from '@minimesh/proto';
import { fromTcpAddress } from '@minimesh/proto';
import {
  compileHosts,
  compileMatch,
  findRoute,
  type CompiledMatch,
  type CompiledRouteBase,
  type RequestView,
} from './http-match.js';
import { metaFromProto, type PolicyMeta } from './server-policy.js';

export interface CompiledRetry {
  maxRetries: number;
  /** Requests with larger bodies are not retried. */
  maxRequestBytes: number;
  /** Retried statuses; empty: only failures to get a response are retried. */
  statusRanges: Array<[number, number]>;
  /** Each attempt's timeout. */
  timeoutMs?: number;
  backoff: { minMs: number; maxMs: number; jitter: number };
}

export interface CompiledTimeouts {
  /** The whole exchange, first request byte to last response byte. */
  requestMs?: number;
  /** From the end of the request to the end of the response. */
  responseMs?: number;
  /** With no frame either way. */
  idleMs?: number;
}

export type CompiledBackend =
  | { kind: 'balancer'; weight: number; meta: PolicyMeta; authority: string }
  | { kind: 'forward'; weight: number; meta: PolicyMeta; addr: { ip: string; port: number } }
  | { kind: 'fail'; weight: number; meta: PolicyMeta; status: number; message: string };

export interface CompiledOutboundRule {
  matches: CompiledMatch[];
  timeouts: CompiledTimeouts;
  retry?: CompiledRetry;
  backends: CompiledBackend[];
  /** A failure the rule itself injects (e.g. an invalid route), as status and message. */
  fail?: { status: number; message: string };
}

/** The rest of a resource's reference (the parent_* and route_* metric labels beside group, kind, name). */
export interface ResourceRef {
  namespace: string;
  section: string;
  port: number;
}

export interface CompiledOutboundRoute extends CompiledRouteBase {
  meta: PolicyMeta;
  ref: ResourceRef;
  rules: CompiledOutboundRule[];
}

/**
 * Consecutive-failures circuit breaking of each endpoint (linkerd2-proxy's ConsecutiveFailures): out
 * after `maxFailures` failures in a row, probed after a penalty of `minMs` doubling to `maxMs`, each
 * with up to `jitter` of it added at random.
 */
export interface CompiledFailureAccrual {
  maxFailures: number;
  minMs: number;
  maxMs: number;
  jitter: number;
}

export interface CompiledOutboundPolicy {
  meta: PolicyMeta;
  ref: ResourceRef;
  /** How the target's traffic is handled. */
  protocol: 'detect' | 'opaque' | 'http1' | 'http2' | 'grpc' | 'tls';
  http1: CompiledOutboundRoute[];
  http2: CompiledOutboundRoute[];
  /** Circuit breaking of the target's endpoints (HTTP and gRPC); absent: none. */
  failureAccrual?: CompiledFailureAccrual;
  /** Set when the policy could not be compiled (the proxy then keeps its own routing). */
  invalid?: string;
}

const NO_REF: ResourceRef = Object.freeze({ namespace: '', section: '', port: 0 });

function refFromProto(m: outbound.OutboundPolicy['metadata']): ResourceRef {
  const k = m?.kind;
  if (k?.$case !== 'resource') return NO_REF;
  return { namespace: k.value.namespace, section: k.value.section, port: k.value.port };
}

const ms = (d: { seconds: bigint; nanos: number } | undefined): number | undefined =>
  d === undefined ? undefined : Number(d.seconds) * 1000 + Math.floor(d.nanos / 1e6);

function compileBackend(
  b: outbound.Backend | undefined,
  weight: number,
  filters: outbound.HttpRoute_Filter[],
): CompiledBackend {
  const meta = metaFromProto(b?.metadata, { group: '', kind: 'default', name: 'backend' });
  const fail = filters.find((f) => f.kind?.$case === 'failureInjector')?.kind;
  if (fail?.$case === 'failureInjector')
    return { kind: 'fail', weight, meta, status: fail.value.status, message: fail.value.message };
  const k = b?.kind;
  if (k?.$case === 'balancer') {
    const d = k.value.discovery?.kind;
    if (d?.$case !== 'dst') throw new Error(`backend ${meta.name}: balancer without Destination discovery`);
    return { kind: 'balancer', weight, meta, authority: d.value.path };
  }
  if (k?.$case === 'forward') {
    const addr = fromTcpAddress(k.value.addr);
    if (!addr) throw new Error(`backend ${meta.name}: forward without an address`);
    return { kind: 'forward', weight, meta, addr };
  }
  return { kind: 'fail', weight, meta, status: 500, message: `backend ${meta.name} is invalid` };
}

/**
 * The protocol's failure accrual, as linkerd2-proxy reads it: ConsecutiveFailures needs a backoff
 * (without one the policy is invalid); max_failures 0 switches it off; a Unified breaker is not
 * implemented by minimesh-proxy and is ignored (no circuit breaking).
 */
function compileFailureAccrual(fa: outbound.FailureAccrual | undefined): CompiledFailureAccrual | undefined {
  const k = fa?.kind;
  if (k?.$case !== 'consecutiveFailures') return undefined;
  const b = k.value.backoff;
  if (b === undefined) throw new Error('failure accrual without a backoff');
  const minMs = ms(b.minBackoff) ?? 0;
  const maxMs = ms(b.maxBackoff) ?? 0;
  if (maxMs <= 0 || minMs > maxMs) throw new Error(`failure accrual backoff ${minMs}-${maxMs} ms is invalid`);
  if (!(b.jitterRatio >= 0)) throw new Error(`failure accrual jitter ${b.jitterRatio} is invalid`);
  if (k.value.maxFailures === 0) return undefined;
  return { maxFailures: k.value.maxFailures, minMs, maxMs, jitter: b.jitterRatio };
}

const withAccrual = (fa: outbound.FailureAccrual | undefined): { failureAccrual?: CompiledFailureAccrual } => {
  const c = compileFailureAccrual(fa);
  return c ? { failureAccrual: c } : {};
};

function compileRetry(r: outbound.HttpRoute_Retry): CompiledRetry {
  const ranges = (r.conditions?.statusRanges ?? []).map((s): [number, number] => {
    if (s.start === 0 || s.end === 0 || s.end > 599 || s.start > s.end)
      throw new Error(`retry status range ${s.start}-${s.end} is invalid`);
    return [s.start, s.end];
  });
  if (!r.conditions) throw new Error('retry without conditions');
  const timeoutMs = ms(r.timeout);
  return {
    maxRetries: r.maxRetries,
    maxRequestBytes: r.maxRequestBytes,
    statusRanges: ranges,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    backoff: {
      minMs: ms(r.backoff?.minBackoff) ?? 25,
      maxMs: ms(r.backoff?.maxBackoff) ?? 250,
      jitter: r.backoff?.jitterRatio ?? 0,
    },
  };
}

function compileRoute(r: outbound.HttpRoute): CompiledOutboundRoute {
  if (r.rules.length === 0) throw new Error('route without rules');
  return {
    meta: metaFromProto(r.metadata, { group: '', kind: 'default', name: 'http' }),
    ref: refFromProto(r.metadata),
    hosts: compileHosts(r.hosts),
    rules: r.rules.map((rule) => {
      const dist = rule.backends?.kind;
      const list =
        dist?.$case === 'firstAvailable'
          ? dist.value.backends.slice(0, 1).map((b) => compileBackend(b.backend, 1, b.filters))
          : dist?.$case === 'randomAvailable'
            ? dist.value.backends.map((w) => compileBackend(w.backend?.backend, w.weight, w.backend?.filters ?? []))
            : [];
      const t = rule.timeouts;
      const timeouts: CompiledTimeouts = {};
      const request = ms(t?.request) ?? ms(rule.requestTimeout);
      if (request) timeouts.requestMs = request;
      const response = ms(t?.response);
      if (response) timeouts.responseMs = response;
      const idle = ms(t?.idle);
      if (idle) timeouts.idleMs = idle;
      const injected = rule.filters.find((f) => f.kind?.$case === 'failureInjector')?.kind;
      return {
        matches: rule.matches.map(compileMatch),
        timeouts,
        ...(rule.retry ? { retry: compileRetry(rule.retry) } : {}),
        backends: list,
        ...(injected?.$case === 'failureInjector'
          ? { fail: { status: injected.value.status, message: injected.value.message } }
          : {}),
      };
    }),
  };
}

export function compileOutboundPolicy(p: outbound.OutboundPolicy): CompiledOutboundPolicy {
  const meta = metaFromProto(p.metadata, { group: '', kind: 'default', name: 'unknown' });
  const ref = refFromProto(p.metadata);
  try {
    const k = p.protocol?.kind;
    if (!k) throw new Error('no protocol');
    switch (k.$case) {
      case 'detect':
        return {
          meta,
          ref,
          protocol: 'detect',
          http1: (k.value.http1?.routes ?? []).map(compileRoute),
          http2: (k.value.http2?.routes ?? []).map(compileRoute),
          ...withAccrual(k.value.http1?.failureAccrual ?? k.value.http2?.failureAccrual),
        };
      case 'http1':
        return {
          meta,
          ref,
          protocol: 'http1',
          http1: k.value.routes.map(compileRoute),
          http2: [],
          ...withAccrual(k.value.failureAccrual),
        };
      case 'http2':
        return {
          meta,
          ref,
          protocol: 'http2',
          http1: [],
          http2: k.value.routes.map(compileRoute),
          ...withAccrual(k.value.failureAccrual),
        };
      case 'grpc':
        return { meta, ref, protocol: 'grpc', http1: [], http2: [], ...withAccrual(k.value.failureAccrual) };
      case 'opaque':
      case 'tls':
        return { meta, ref, protocol: k.$case, http1: [], http2: [] };
    }
  } catch (err) {
    return { meta, ref, protocol: 'detect', http1: [], http2: [], invalid: (err as Error).message };
  }
}

/** The route and rule for an HTTP request (HTTP/1 routes for HTTP/1, HTTP/2 routes for h2). */
export function routeOutbound(
  p: CompiledOutboundPolicy,
  version: 'http1' | 'h2',
  req: RequestView,
): { route: CompiledOutboundRoute; rule: CompiledOutboundRule } | undefined {
  const routes = version === 'h2' ? (p.http2.length ? p.http2 : p.http1) : p.http1.length ? p.http1 : p.http2;
  const hit = findRoute(routes, req);
  return hit && { route: hit.route, rule: hit.rule };
}

/** Whether a response status is retried under the policy (no ranges: none is). */
export function isRetryableStatus(retry: CompiledRetry, status: number): boolean {
  return retry.statusRanges.some(([lo, hi]) => status >= lo && status <= hi);
}
