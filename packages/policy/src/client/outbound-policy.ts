// Outbound routes over the proxy API's form (outbound.OutboundPolicy), compiled once per update: the
// route and rule of a request, with its timeouts, retry policy, filters and backends, as linkerd2-proxy
// applies them. HTTP routes and gRPC routes compile to one form: a gRPC match is a match on the
// request's path (/<service>/<method>) and headers, a gRPC retry condition a gRPC status code. TLS
// routes (picked by SNI, routeTls) and opaque routes carry a filter that may refuse the connection and
// their backends (Forward to an address, Balancer over a Service).
// minimesh-proxy's route layer and `minimesh explain` use it.
import type { grpcRoute, httpRoute, outbound, tlsRoute } from '@minimesh/proto';
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
  /** gRPC status codes that are retried (a gRPC route's conditions); empty for an HTTP route. */
  grpcCodes: number[];
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

/** Header edits, in the Gateway API's order: add (appended to a present value), set, remove. Names lower-case. */
export interface CompiledHeaderEdit {
  add: Array<[string, string]>;
  set: Array<[string, string]>;
  remove: string[];
}

/** A path replacement: the whole path, or the part the rule's path prefix matched. */
export interface CompiledPathReplace {
  kind: 'full' | 'prefix';
  value: string;
}

export type CompiledRouteFilter =
  | { kind: 'requestHeaders'; edit: CompiledHeaderEdit }
  | { kind: 'responseHeaders'; edit: CompiledHeaderEdit }
  | {
      kind: 'redirect';
      /** Unset: the request's own scheme, host, port, path. */
      scheme?: string;
      host?: string;
      port?: number;
      path?: CompiledPathReplace;
      status: number;
    }
  | { kind: 'rewrite'; host?: string; path?: CompiledPathReplace }
  /** A copy of the request goes to `backend` (the share `ratio` of requests, in [0, 1]). */
  | { kind: 'mirror'; backend: CompiledBackend; ratio: number };

interface BackendBase {
  weight: number;
  meta: PolicyMeta;
  /** The backend's own filters, applied after the rule's. */
  filters: CompiledRouteFilter[];
}

export type CompiledBackend =
  | (BackendBase & { kind: 'balancer'; authority: string })
  | (BackendBase & { kind: 'forward'; addr: { ip: string; port: number } })
  | (BackendBase & { kind: 'fail'; status: number; message: string });

export interface CompiledOutboundRule {
  matches: CompiledMatch[];
  /** The path prefixes of the rule's prefix matches (what a prefix replacement replaces). */
  prefixes: string[];
  /** The rule's filters, in order (an injected failure is `fail`). */
  filters: CompiledRouteFilter[];
  /** A gRPC route's rule: failures are answered with gRPC statuses. */
  grpc: boolean;
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

/** Why a connection is refused (linkerd2-proxy's error kinds: forbidden, invalid_backend). */
export interface CompiledRefusal {
  error: 'forbidden' | 'invalid_backend';
  message: string;
}

/** An opaque or TLS route's backend: a Forward or Balancer backend, or one a filter refuses. */
export type CompiledTransportBackend =
  | { kind: 'balancer'; weight: number; meta: PolicyMeta; authority: string }
  | { kind: 'forward'; weight: number; meta: PolicyMeta; addr: { ip: string; port: number } }
  | { kind: 'refused'; weight: number; meta: PolicyMeta; refused: CompiledRefusal };

/**
 * What happens to an opaque (TCP) connection: its route's name, whether the route forbids it
 * (linkerd2-proxy's opaque route Filter::Forbidden, or an invalid backend: the connection is refused),
 * and the backends it is relayed to (picked by weight; a FirstAvailable distribution is its first).
 */
export interface CompiledOpaqueRoute {
  meta: PolicyMeta;
  /** The route's namespace (the route_namespace label); absent for a default route. */
  ref?: ResourceRef;
  /** Refused: why (a route filter: the first one applies). */
  refused?: CompiledRefusal;
  /**
   * Absent: the target's own (what discovery finds for the original destination). A default route's
   * one backend is always the target's own (the controller's default backend: the original
   * destination for an EgressNetwork, the Service for a Service), so it is left absent too.
   */
  backends?: CompiledTransportBackend[];
}

/**
 * A server name match of a TLS route (linkerd2-proxy-api's SniMatch): a whole name, or the labels after
 * a leading `*.` (last label first, as the API sends them: *.example.com is ["com", "example"]).
 */
export type CompiledSniMatch = { kind: 'exact'; name: string } | { kind: 'suffix'; reverseLabels: string[] };

/** A TLS route (a TLSRoute, or an EgressNetwork's default tls-egress-allow/deny): its SNIs and its one rule. */
export interface CompiledTlsRoute extends CompiledOpaqueRoute {
  /** Empty: every server name. */
  snis: CompiledSniMatch[];
}

export interface CompiledOutboundPolicy {
  meta: PolicyMeta;
  ref: ResourceRef;
  /** How the target's traffic is handled. */
  protocol: 'detect' | 'opaque' | 'http1' | 'http2' | 'grpc' | 'tls';
  http1: CompiledOutboundRoute[];
  http2: CompiledOutboundRoute[];
  /** The opaque route (detect and opaque protocols); absent: none sent, the connection goes on as it is. */
  opaque?: CompiledOpaqueRoute;
  /** The TLS routes (the tls protocol), in the controller's order; routeTls picks one by SNI. */
  tls?: CompiledTlsRoute[];
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

type AnyFilter = outbound.HttpRoute_Filter | outbound.GrpcRoute_Filter;

function headerEdit(m: {
  add?: { headers: Array<{ name: string; value: Uint8Array }> } | undefined;
  set?: { headers: Array<{ name: string; value: Uint8Array }> } | undefined;
  remove: string[];
}): CompiledHeaderEdit {
  const pairs = (h: { headers: Array<{ name: string; value: Uint8Array }> } | undefined): Array<[string, string]> =>
    (h?.headers ?? []).map((x) => [x.name.toLowerCase(), Buffer.from(x.value).toString('latin1')]);
  return { add: pairs(m.add), set: pairs(m.set), remove: m.remove.map((r) => r.toLowerCase()) };
}

function pathReplace(p: httpRoute.PathModifier | undefined): CompiledPathReplace | undefined {
  const r = p?.replace;
  return r ? { kind: r.$case, value: r.value } : undefined;
}

function ratioOf(r: httpRoute.Ratio | undefined): number {
  return r === undefined ? 1 : r.denominator === 0 ? 0 : Math.min(1, r.numerator / r.denominator);
}

/** A route's or backend's filters (failure injectors are taken apart: the rule's `fail`, a backend's kind). */
function compileFilters(list: readonly AnyFilter[], grpc: boolean): CompiledRouteFilter[] {
  const out: CompiledRouteFilter[] = [];
  for (const f of list) {
    const k = f.kind;
    if (!k) throw new Error('route filter without a kind');
    switch (k.$case) {
      case 'failureInjector':
        break;
      case 'requestHeaderModifier':
        out.push({ kind: 'requestHeaders', edit: headerEdit(k.value) });
        break;
      case 'responseHeaderModifier':
        out.push({ kind: 'responseHeaders', edit: headerEdit(k.value) });
        break;
      case 'redirect': {
        const r = k.value;
        const t = r.scheme?.type;
        const scheme =
          t === undefined ? undefined : t.$case === 'registered' ? (t.value === 1 ? 'https' : 'http') : t.value;
        const path = pathReplace(r.path);
        out.push({
          kind: 'redirect',
          status: r.status || 302,
          ...(scheme ? { scheme } : {}),
          ...(r.host ? { host: r.host } : {}),
          ...(r.port ? { port: r.port } : {}),
          ...(path ? { path } : {}),
        });
        break;
      }
      case 'urlRewrite': {
        const path = pathReplace(k.value.path);
        out.push({ kind: 'rewrite', ...(k.value.host ? { host: k.value.host } : {}), ...(path ? { path } : {}) });
        break;
      }
      case 'requestMirror':
        out.push({
          kind: 'mirror',
          backend: compileBackend(k.value.backend, 1, [], grpc),
          ratio: ratioOf(k.value.ratio),
        });
        break;
    }
  }
  return out;
}

function compileBackend(
  b: outbound.Backend | undefined,
  weight: number,
  filters: readonly AnyFilter[],
  grpc: boolean,
): CompiledBackend {
  const meta = metaFromProto(b?.metadata, { group: '', kind: 'default', name: 'backend' });
  const compiled = compileFilters(filters, grpc);
  const fail = filters.find((f) => f.kind?.$case === 'failureInjector')?.kind;
  if (fail?.$case === 'failureInjector') {
    const status = 'status' in fail.value ? fail.value.status : fail.value.code;
    return { kind: 'fail', weight, meta, filters: compiled, status, message: fail.value.message };
  }
  const k = b?.kind;
  if (k?.$case === 'balancer') {
    const d = k.value.discovery?.kind;
    if (d?.$case !== 'dst') throw new Error(`backend ${meta.name}: balancer without Destination discovery`);
    return { kind: 'balancer', weight, meta, filters: compiled, authority: d.value.path };
  }
  if (k?.$case === 'forward') {
    const addr = fromTcpAddress(k.value.addr);
    if (!addr) throw new Error(`backend ${meta.name}: forward without an address`);
    return { kind: 'forward', weight, meta, filters: compiled, addr };
  }
  return {
    kind: 'fail',
    weight,
    meta,
    filters: compiled,
    status: grpc ? GRPC_UNAVAILABLE : 500,
    message: `backend ${meta.name} is invalid`,
  };
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

const GRPC_UNAVAILABLE = 14;

function compileRetry(r: outbound.HttpRoute_Retry | outbound.GrpcRoute_Retry): CompiledRetry {
  if (!r.conditions) throw new Error('retry without conditions');
  const c = r.conditions;
  const ranges =
    'statusRanges' in c
      ? c.statusRanges.map((s): [number, number] => {
          if (s.start === 0 || s.end === 0 || s.end > 599 || s.start > s.end)
            throw new Error(`retry status range ${s.start}-${s.end} is invalid`);
          return [s.start, s.end];
        })
      : [];
  // The field numbers of GrpcRoute.Retry.Conditions are the codes.
  const grpcCodes =
    'statusRanges' in c
      ? []
      : [
          c.cancelled ? 1 : 0,
          c.deadineExceeded ? 4 : 0,
          c.resourceExhausted ? 8 : 0,
          c.internal ? 13 : 0,
          c.unavailable ? 14 : 0,
        ].filter((x) => x > 0);
  const timeoutMs = ms(r.timeout);
  return {
    maxRetries: r.maxRetries,
    grpcCodes,
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

type AnyRule = outbound.HttpRoute_Rule | outbound.GrpcRoute_Rule;

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A gRPC match as an HTTP one: the method's path (/<service>/<method>) and the headers. */
function fromGrpcMatch(m: grpcRoute.GrpcRouteMatch): httpRoute.HttpRouteMatch {
  const service = m.rpc?.service ?? '';
  const method = m.rpc?.method ?? '';
  const path: httpRoute.PathMatch | undefined =
    service && method
      ? { kind: { $case: 'exact', value: `/${service}/${method}` } }
      : service
        ? { kind: { $case: 'prefix', value: `/${service}/` } }
        : method
          ? { kind: { $case: 'regex', value: `/[^/]+/${escapeRegex(method)}` } }
          : undefined;
  return { ...(path ? { path } : {}), headers: m.headers, queryParams: [] };
}

function compileRule(rule: AnyRule, grpc: boolean): CompiledOutboundRule {
  const dist = rule.backends?.kind;
  const list =
    dist?.$case === 'firstAvailable'
      ? dist.value.backends.slice(0, 1).map((b) => compileBackend(b.backend, 1, b.filters, grpc))
      : dist?.$case === 'randomAvailable'
        ? dist.value.backends.map((w) => compileBackend(w.backend?.backend, w.weight, w.backend?.filters ?? [], grpc))
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
  const httpMatches: httpRoute.HttpRouteMatch[] = grpc
    ? (rule as outbound.GrpcRoute_Rule).matches.map(fromGrpcMatch)
    : (rule as outbound.HttpRoute_Rule).matches;
  const prefixes = httpMatches.flatMap((m) => (m.path?.kind?.$case === 'prefix' ? [m.path.kind.value] : []));
  return {
    matches: httpMatches.map(compileMatch),
    prefixes,
    filters: compileFilters(rule.filters, grpc),
    grpc,
    timeouts,
    ...(rule.retry ? { retry: compileRetry(rule.retry) } : {}),
    backends: list,
    ...(injected?.$case === 'failureInjector'
      ? {
          fail: {
            status: 'status' in injected.value ? injected.value.status : injected.value.code,
            message: injected.value.message,
          },
        }
      : {}),
  };
}

function compileAnyRoute(r: outbound.HttpRoute | outbound.GrpcRoute, grpc: boolean): CompiledOutboundRoute {
  if (r.rules.length === 0) throw new Error('route without rules');
  return {
    meta: metaFromProto(r.metadata, { group: '', kind: 'default', name: grpc ? 'grpc' : 'http' }),
    ref: refFromProto(r.metadata),
    hosts: compileHosts(r.hosts),
    rules: (r.rules as AnyRule[]).map((rule) => compileRule(rule, grpc)),
  };
}

const compileRoute = (r: outbound.HttpRoute): CompiledOutboundRoute => compileAnyRoute(r, false);
const compileGrpcRoute = (r: outbound.GrpcRoute): CompiledOutboundRoute => compileAnyRoute(r, true);

type TransportFilter = outbound.OpaqueRoute_Filter | outbound.TlsRoute_Filter;
type TransportRule = outbound.OpaqueRoute_Rule | outbound.TlsRoute_Rule;
type TransportRouteBackend = outbound.OpaqueRoute_RouteBackend | outbound.TlsRoute_RouteBackend;

/** The first of a route's or backend's filters, as linkerd2-proxy applies them (the first one decides). */
function refusalOf(filters: readonly TransportFilter[], what: string, proto = ''): CompiledRefusal | undefined {
  const k = filters[0]?.kind;
  if (filters.length > 0 && k === undefined) throw new Error(`${what}: filter without a kind`);
  if (k?.$case === 'forbidden') return { error: 'forbidden', message: `${what}: ${proto}connection forbidden` };
  if (k?.$case === 'invalid')
    return { error: 'invalid_backend', message: k.value.message || `${what}: invalid backend` };
  return undefined;
}

function compileTransportBackend(rb: TransportRouteBackend | undefined, weight: number): CompiledTransportBackend {
  if (rb === undefined) throw new Error('route backend without a backend');
  const b = rb.backend;
  const meta = metaFromProto(b?.metadata, { group: '', kind: 'default', name: 'backend' });
  // The controller sends an unusable backendRef (a Service that does not exist, another EgressNetwork) as
  // a backend without a kind and an Invalid filter: its share of connections is refused.
  const refused = refusalOf(rb.filters, `backend ${meta.name}`);
  if (refused) return { kind: 'refused', weight, meta, refused };
  const k = b?.kind;
  if (k?.$case === 'forward') {
    const addr = fromTcpAddress(k.value.addr);
    if (!addr) throw new Error(`backend ${meta.name}: forward without an address`);
    return { kind: 'forward', weight, meta, addr };
  }
  if (k?.$case === 'balancer') {
    const d = k.value.discovery?.kind;
    if (d?.$case !== 'dst') throw new Error(`backend ${meta.name}: balancer without Destination discovery`);
    return { kind: 'balancer', weight, meta, authority: d.value.path };
  }
  throw new Error(`backend ${meta.name} has no kind`);
}

/**
 * A TCP or TLS route's one rule (linkerd2-proxy takes exactly one): its route filter (the first one
 * refuses), its distribution (required; RandomAvailable and FirstAvailable need a backend; Empty
 * refuses every connection, as linkerd2-proxy's empty distribution never becomes ready and sheds them).
 */
function compileTransportRule(
  meta: PolicyMeta,
  rules: readonly TransportRule[],
  what: 'opaque route' | 'TLS route',
): Pick<CompiledOpaqueRoute, 'refused' | 'backends'> {
  if (rules.length !== 1) throw new Error(`${what} ${meta.name}: exactly one rule is needed, not ${rules.length}`);
  const rule = rules[0]!;
  const refused = refusalOf(rule.filters, `route ${meta.name}`, what === 'TLS route' ? 'TLS ' : 'TCP ');
  const d = rule.backends?.kind;
  if (d === undefined) throw new Error(`${what} ${meta.name}: rule without a distribution`);
  let backends: CompiledTransportBackend[] = [];
  if (d.$case === 'firstAvailable') {
    if (d.value.backends.length === 0) throw new Error(`${what} ${meta.name}: FirstAvailable without backends`);
    backends = [compileTransportBackend(d.value.backends[0], 1)];
  } else if (d.$case === 'randomAvailable') {
    if (d.value.backends.length === 0) throw new Error(`${what} ${meta.name}: RandomAvailable without backends`);
    backends = d.value.backends.map((w) => compileTransportBackend(w.backend, w.weight));
  }
  const own = meta.kind === 'default' && backends.length === 1 && backends[0]!.kind !== 'refused';
  if (refused) return own || backends.length === 0 ? { refused } : { refused, backends };
  if (backends.length === 0)
    return { refused: { error: 'invalid_backend', message: `route ${meta.name}: no backend` } };
  return own ? {} : { backends };
}

const routeRef = (m: outbound.OpaqueRoute['metadata']): { ref?: ResourceRef } => {
  const r = refFromProto(m);
  return r === NO_REF ? {} : { ref: r };
};

/** The first opaque route, as linkerd2-proxy applies it to a connection. */
function compileOpaque(routes: readonly outbound.OpaqueRoute[] | undefined): { opaque?: CompiledOpaqueRoute } {
  const r = routes?.[0];
  if (r === undefined) return {};
  const meta = metaFromProto(r.metadata, { group: '', kind: 'default', name: 'opaq' });
  return { opaque: { meta, ...routeRef(r.metadata), ...compileTransportRule(meta, r.rules, 'opaque route') } };
}

function compileSni(m: tlsRoute.SniMatch): CompiledSniMatch {
  const k = m.match;
  if (k === undefined) throw new Error('SNI match without a match');
  if (k.$case === 'exact') return { kind: 'exact', name: k.value.toLowerCase() };
  return { kind: 'suffix', reverseLabels: k.value.reverseLabels.map((l) => l.toLowerCase()) };
}

function compileTls(routes: readonly outbound.TlsRoute[]): CompiledTlsRoute[] {
  return routes.map((r) => {
    const meta = metaFromProto(r.metadata, { group: '', kind: 'default', name: 'tls' });
    return {
      meta,
      ...routeRef(r.metadata),
      snis: r.snis.map(compileSni),
      ...compileTransportRule(meta, r.rules, 'TLS route'),
    };
  });
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
          ...compileOpaque(k.value.opaque?.routes),
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
      case 'grpc': {
        // gRPC is HTTP/2: its routes serve HTTP/2 requests (and HTTP/1 ones, which find no gRPC method).
        const grpcRoutes = k.value.routes.map(compileGrpcRoute);
        return {
          meta,
          ref,
          protocol: 'grpc',
          http1: [],
          http2: grpcRoutes,
          ...withAccrual(k.value.failureAccrual),
        };
      }
      case 'opaque':
        return { meta, ref, protocol: 'opaque', http1: [], http2: [], ...compileOpaque(k.value.routes) };
      case 'tls':
        return { meta, ref, protocol: 'tls', http1: [], http2: [], tls: compileTls(k.value.routes) };
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

/**
 * How specifically a TLS route's SNI matches a server name, as linkerd2-proxy ranks it
 * (linkerd/tls/route/src/sni.rs): an exact match beats a suffix one, a longer one a shorter one;
 * -1: no match. A name's trailing dot is ignored unless the match has one itself.
 */
export function sniMatchScore(m: CompiledSniMatch, sni: string): number {
  let name = sni.toLowerCase();
  if (m.kind === 'exact') {
    if (!m.name.endsWith('.') && name.endsWith('.')) name = name.slice(0, -1);
    return name === m.name ? 1_000_000 + m.name.length : -1;
  }
  if (m.reverseLabels[0] !== '' && name.endsWith('.')) name = name.slice(0, -1);
  let length = 0;
  for (const label of m.reverseLabels) {
    if (!name.endsWith(label)) return -1;
    name = name.slice(0, name.length - label.length);
    if (!name.endsWith('.')) return -1;
    name = name.slice(0, -1);
    length += label.length + 1;
  }
  return length;
}

/**
 * The TLS route for a server name (linkerd2-proxy's tls route find): among the routes whose SNIs match
 * it (a route without SNIs matches every name, least specifically), the most specific match; on a tie,
 * the first route. Undefined: no route matches (linkerd2-proxy then fails the connection, "no route").
 */
export function routeTls(p: CompiledOutboundPolicy, sni: string): CompiledTlsRoute | undefined {
  let best: CompiledTlsRoute | undefined;
  let bestScore = -2;
  for (const r of p.tls ?? []) {
    let score = -1;
    if (r.snis.length === 0) score = -1;
    else {
      let top = -2;
      for (const m of r.snis) top = Math.max(top, sniMatchScore(m, sni));
      if (top < 0) continue;
      score = top;
    }
    if (score > bestScore) {
      best = r;
      bestScore = score;
    }
  }
  return best;
}

/** Whether a gRPC status is retried under the policy (a gRPC route's conditions). */
export function isRetryableGrpc(retry: CompiledRetry, code: number): boolean {
  return retry.grpcCodes.includes(code);
}

/** Whether a response status is retried under the policy (no ranges: none is). */
export function isRetryableStatus(retry: CompiledRetry, status: number): boolean {
  return retry.statusRanges.some(([lo, hi]) => status >= lo && status <= hi);
}
