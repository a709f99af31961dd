// OutboundPolicy (the model) → io.linkerd.proxy.outbound.OutboundPolicy, as Linkerd's policy
// controller encodes a Service port: protocol detection (10 s) with HTTP/1, HTTP/2 and opaque routes
// unless the port's appProtocol says otherwise, or the gRPC protocol when GRPCRoutes hold the port;
// each backend a P2C balancer over Destination.Get of the Service authority with peak-EWMA (30 ms
// default RTT, 10 s decay) and a queue of 100 (3 s fail-fast); a backend that cannot be reached (a
// missing Service, an unsupported kind) a backend without endpoints whose failure injector answers
// 500 (gRPC: UNAVAILABLE) for its share; retries with 25-250 ms backoff and 64 KiB request
// buffering; a port TLSRoutes hold is TLS by SNI, one a TCPRoute holds opaque with that route. Also
// the answers for addresses that are not Services: an EgressNetwork's, a forward to the original
// destination, or a forbidden route for an undefined port.
//
// Where minimesh differs from Linkerd's encoder (and why):
// - URLRewrite and RequestMirror (HTTP), ResponseHeaderModifier and RequestMirror (gRPC) are sent as
//   minimesh's extension filters (outbound.proto, field numbers from 100); Linkerd's controller does
//   not serve a route with them at all.
// - a gRPC backend that cannot be reached answers UNAVAILABLE (14), as the GRPCRoute spec says;
//   Linkerd's encoder writes 500 into the gRPC code.
// - a rule whose backendRefs all have weight 0 gets a failure injector (500) after its own filters:
//   nothing may receive its traffic (Linkerd sends the zero weights as they are, which linkerd2-proxy
//   cannot build a distribution from).
import { toTcpAddress, type grpcRoute, type outbound } from '@minimesh/proto';
import { POLICY_GROUP } from '../resources/kinds.js';
import type {
  EgressPolicy,
  FailureAccrual,
  GrpcFilter,
  GrpcRouteMatch,
  GrpcRouteRetry,
  HttpFilter,
  OutboundGrpcRouteRule,
  OutboundHttpRouteRule,
  OutboundPolicy,
  OutboundTcpRoute,
  OutboundTlsRoute,
  RouteBackend,
  RouteRetry,
  RouteTimeouts,
} from '../model.js';
import {
  defaultMeta,
  resourceMeta,
  routeMeta,
  toDuration,
  toFilterKind,
  toHeaderMatch,
  toHostMatch,
  toHttpMatch,
  toRequestHeaderModifier,
  toSniMatch,
} from './translate-common.js';

export const DETECT_TIMEOUT_MS = 10_000;
const QUEUE: outbound.Queue = { capacity: 100, failfastTimeout: toDuration(3000) };
const LOAD: outbound.Backend_BalanceP2c['load'] = {
  $case: 'peakEwma',
  value: { defaultRtt: toDuration(30), decay: toDuration(10_000) },
};
const BACKOFF: outbound.ExponentialBackoff = {
  minBackoff: toDuration(25),
  maxBackoff: toDuration(250),
  jitterRatio: 1,
  respectRetryAfterHint: false,
};
/** gRPC UNAVAILABLE: what a GRPCRoute's unreachable backend answers. */
const GRPC_UNAVAILABLE = 14;

function serviceBackend(b: { namespace: string; name: string; port: number; authority: string }): outbound.Backend {
  return {
    metadata: resourceMeta({ group: 'core', kind: 'Service', name: b.name, namespace: b.namespace, port: b.port }),
    queue: QUEUE,
    kind: {
      $case: 'balancer',
      value: { discovery: { kind: { $case: 'dst', value: { path: b.authority } } }, load: LOAD },
    },
  };
}

/**
 * What a route's backends resolve against: the parent's own backend (a rule without backendRefs sends
 * there), and for an EgressNetwork parent its identity and the original destination (an EgressNetwork
 * backendRef naming the parent forwards there).
 */
export interface ParentContext {
  backend: outbound.Backend;
  egress?: { namespace: string; name: string };
  dst?: { ip: string; port: number };
}

/** A backend the proxy can send to (with its filters), or one it cannot: its metadata and why. */
type Resolved =
  | { ok: true; backend: outbound.Backend; filters: HttpFilter[] }
  | { ok: false; backend: outbound.Backend; message: string };

/**
 * The one home of backend resolution for every route kind (HTTP, gRPC, TLS, opaque), with Linkerd's
 * messages for what cannot be reached (policy-controller/grpc/src/outbound/{http,grpc,tls,tcp}.rs
 * convert_backend, linkerd2 edge-26.8.3): a Service that exists is a balancer; a missing one "Service
 * not found <name>"; an EgressNetwork backendRef naming the route's own EgressNetwork parent forwards to
 * the original destination (metadata: the EgressNetwork, the backendRef's port or else the original
 * one); another EgressNetwork, one that does not exist, or one on a Service parent is invalid.
 */
function resolveBackend(b: RouteBackend, parent: ParentContext): Resolved {
  const down = (metadata: outbound.Backend['metadata'], message: string): Resolved => ({
    ok: false,
    backend: { metadata, queue: QUEUE },
    message,
  });
  switch (b.kind) {
    case 'service':
      return b.exists
        ? { ok: true, backend: serviceBackend(b), filters: b.filters }
        : down(
            resourceMeta({ group: 'core', kind: 'Service', name: b.name, namespace: b.namespace, port: b.port }),
            `Service not found ${b.name}`,
          );
    case 'invalid':
      return down(defaultMeta('invalid'), b.message);
    case 'egress': {
      const port = b.port ?? parent.dst?.port ?? 0;
      const metadata = resourceMeta({
        group: POLICY_GROUP,
        kind: 'EgressNetwork',
        name: b.name,
        namespace: b.namespace,
        port,
      });
      if (!b.exists) return down(metadata, `EgressNetwork not found ${b.name}`);
      if (!parent.egress) return down(metadata, 'EgressNetwork backends attach to EgressNetwork parents only');
      if (!parent.dst) return down(metadata, 'EgressNetwork can be resolved from an ip:port combo only');
      if (parent.egress.namespace !== b.namespace || parent.egress.name !== b.name)
        return down(metadata, 'Route with EgressNetwork backend needs to have the same EgressNetwork as a parent');
      return {
        ok: true,
        backend: {
          metadata,
          queue: QUEUE,
          kind: {
            $case: 'forward',
            value: { addr: toTcpAddress(parent.dst.ip, parent.dst.port), weight: b.weight, metricLabels: {} },
          },
        },
        filters: b.filters,
      };
    }
  }
}

function toMirror(
  m: Extract<HttpFilter, { kind: 'requestMirror' }>['mirror'],
  parent: ParentContext,
): outbound.RequestMirror {
  const r = resolveBackend(m.backend, parent);
  return {
    // A mirror that cannot be reached is a backend without endpoints: its copies go nowhere.
    backend: r.backend,
    ...(m.fraction ? { ratio: { numerator: m.fraction.numerator, denominator: m.fraction.denominator } } : {}),
  };
}

function toUrlRewrite(r: Extract<HttpFilter, { kind: 'urlRewrite' }>['rewrite']): outbound.UrlRewrite {
  return {
    host: r.hostname ?? '',
    ...(r.path ? { path: { replace: { $case: r.path.kind, value: r.path.value } } } : {}),
  };
}

function toHttpFilters(list: readonly HttpFilter[], parent: ParentContext): outbound.HttpRoute_Filter[] {
  return list.map((f): outbound.HttpRoute_Filter => {
    switch (f.kind) {
      case 'urlRewrite':
        return { kind: { $case: 'urlRewrite', value: toUrlRewrite(f.rewrite) } };
      case 'requestMirror':
        return { kind: { $case: 'requestMirror', value: toMirror(f.mirror, parent) } };
      case 'requestHeaderModifier':
      case 'requestRedirect':
      case 'responseHeaderModifier':
        return { kind: toFilterKind(f) };
    }
  });
}

function toGrpcFilters(list: readonly GrpcFilter[], parent: ParentContext): outbound.GrpcRoute_Filter[] {
  return list.map((f): outbound.GrpcRoute_Filter => {
    switch (f.kind) {
      case 'requestHeaderModifier':
        return { kind: { $case: 'requestHeaderModifier', value: toRequestHeaderModifier(f.modifier) } };
      case 'responseHeaderModifier':
        return { kind: { $case: 'responseHeaderModifier', value: toRequestHeaderModifier(f.modifier) } };
      case 'requestMirror':
        return { kind: { $case: 'requestMirror', value: toMirror(f.mirror, parent) } };
    }
  });
}

function toRetry(r: RouteRetry): outbound.HttpRoute_Retry {
  return {
    maxRetries: r.limit,
    maxRequestBytes: 64 * 1024,
    conditions: { statusRanges: (r.statusRanges ?? []).map((s) => ({ start: s.min, end: s.max })) },
    ...(r.timeoutMs !== undefined ? { timeout: toDuration(r.timeoutMs) } : {}),
    backoff: BACKOFF,
  };
}

function toGrpcRetry(r: GrpcRouteRetry): outbound.GrpcRoute_Retry {
  const on = new Set(r.conditions ?? []);
  return {
    maxRetries: r.limit,
    maxRequestBytes: 64 * 1024,
    conditions: {
      cancelled: on.has('cancelled'),
      deadineExceeded: on.has('deadline-exceeded'),
      resourceExhausted: on.has('resource-exhausted'),
      internal: on.has('internal'),
      unavailable: on.has('unavailable'),
    },
    ...(r.timeoutMs !== undefined ? { timeout: toDuration(r.timeoutMs) } : {}),
    backoff: BACKOFF,
  };
}

/**
 * A Service's failure accrual, as Linkerd's controller sends it: ConsecutiveFailures with the penalty
 * as its backoff (Retry-After is not honoured by the consecutive breaker).
 */
function toFailureAccrual(a: FailureAccrual | undefined): outbound.FailureAccrual | undefined {
  if (a === undefined) return undefined;
  return {
    kind: {
      $case: 'consecutiveFailures',
      value: {
        maxFailures: a.maxFailures,
        backoff: {
          minBackoff: toDuration(a.minPenaltyMs),
          maxBackoff: toDuration(a.maxPenaltyMs),
          jitterRatio: a.jitterRatio,
          respectRetryAfterHint: false,
        },
      },
    },
  };
}

function toTimeouts(t: RouteTimeouts): NonNullable<outbound.HttpRoute_Rule['timeouts']> {
  return {
    ...(t.requestMs !== undefined ? { request: toDuration(t.requestMs) } : {}),
    ...(t.responseMs !== undefined ? { response: toDuration(t.responseMs) } : {}),
    ...(t.idleMs !== undefined ? { idle: toDuration(t.idleMs) } : {}),
  };
}

function toHttpRouteBackend(b: RouteBackend, parent: ParentContext): outbound.HttpRoute_WeightedRouteBackend {
  const r = resolveBackend(b, parent);
  if (r.ok) return { weight: b.weight, backend: { backend: r.backend, filters: toHttpFilters(r.filters, parent) } };
  return {
    weight: b.weight,
    backend: {
      backend: r.backend,
      filters: [{ kind: { $case: 'failureInjector', value: { status: 500, message: r.message } } }],
    },
  };
}

function toGrpcRouteBackend(b: RouteBackend, parent: ParentContext): outbound.GrpcRoute_WeightedRouteBackend {
  const r = resolveBackend(b, parent);
  if (r.ok)
    return {
      weight: b.weight,
      backend: { backend: r.backend, filters: toGrpcFilters(r.filters as GrpcFilter[], parent) },
    };
  return {
    weight: b.weight,
    backend: {
      backend: r.backend,
      filters: [{ kind: { $case: 'failureInjector', value: { code: GRPC_UNAVAILABLE, message: r.message } } }],
    },
  };
}

/**
 * A TLSRoute or TCPRoute backend (the two kinds' messages have one shape): what cannot be reached gets
 * the Invalid filter with Linkerd's message (the proxy fails the connection).
 */
function toL4RouteBackend(b: RouteBackend, parent: ParentContext): outbound.OpaqueRoute_WeightedRouteBackend {
  const r = resolveBackend(b, parent);
  return {
    weight: b.weight,
    backend: {
      backend: r.backend,
      filters: r.ok ? [] : [{ kind: { $case: 'invalid', value: { message: r.message } } }],
    },
  };
}

/**
 * The one rule of a TLSRoute or TCPRoute: no backendRefs, the parent's backend; every backendRef of
 * weight 0, nothing (an empty distribution and the Invalid filter, as minimesh does for HTTP); else
 * the backends at random by weight.
 */
function toL4Rule(backends: readonly RouteBackend[], parent: ParentContext): outbound.OpaqueRoute_Rule {
  const zero = zeroWeightMessage(backends);
  if (backends.length === 0)
    return {
      backends: { kind: { $case: 'firstAvailable', value: { backends: [{ backend: parent.backend, filters: [] }] } } },
      filters: [],
    };
  if (zero)
    return {
      backends: { kind: { $case: 'empty', value: {} } },
      filters: [{ kind: { $case: 'invalid', value: { message: zero } } }],
    };
  return {
    backends: {
      kind: { $case: 'randomAvailable', value: { backends: backends.map((b) => toL4RouteBackend(b, parent)) } },
    },
    filters: [],
  };
}

function toTlsRoute(r: OutboundTlsRoute, parent: ParentContext): outbound.TlsRoute {
  return { metadata: routeMeta(r.ref), snis: r.hostnames.map(toSniMatch), rules: [toL4Rule(r.backends, parent)] };
}

function toTcpRoute(r: OutboundTcpRoute, parent: ParentContext): outbound.OpaqueRoute {
  return { metadata: routeMeta(r.ref), rules: [toL4Rule(r.backends, parent)] };
}

/**
 * An EgressNetwork's default TLS or opaque route, after the attached ones: every connection, forwarded
 * to the original destination (`tls-egress-allow`, `tcp-egress-allow`) or refused (`-deny`, the
 * Forbidden filter).
 */
function egressL4Default(prefix: 'tls' | 'tcp', parent: ParentContext, deny: boolean): outbound.OpaqueRoute {
  return {
    metadata: defaultMeta(`${prefix}-egress-${deny ? 'deny' : 'allow'}`),
    rules: [
      {
        backends: {
          kind: { $case: 'firstAvailable', value: { backends: [{ backend: parent.backend, filters: [] }] } },
        },
        filters: deny ? [{ kind: { $case: 'forbidden', value: {} } }] : [],
      },
    ],
  };
}

/**
 * TLSRoutes (any parent): routed by SNI, not terminated; as Linkerd's encoder, the routes oldest first
 * and, on an EgressNetwork, its default route last (policy-controller/grpc/src/outbound/tls.rs).
 */
function tlsProtocol(
  routes: readonly OutboundTlsRoute[],
  parent: ParentContext,
  deny?: boolean,
): outbound.ProxyProtocol['kind'] {
  const out = routes.map((r) => toTlsRoute(r, parent));
  if (deny !== undefined) out.push({ ...egressL4Default('tls', parent, deny), snis: [] });
  return { $case: 'tls', value: { routes: out } };
}

/**
 * TCPRoutes (any parent): a TCPRoute selects nothing, so Linkerd's encoder sends only the oldest one
 * (MAXIMUM_ALLOWED_TCP_ROUTES = 1) and no default route after it: the route decides for every
 * connection, on a Deny EgressNetwork too (policy-controller/grpc/src/outbound/tcp.rs).
 */
function tcpProtocol(routes: readonly OutboundTcpRoute[], parent: ParentContext): outbound.ProxyProtocol['kind'] {
  return { $case: 'opaque', value: { routes: routes.slice(0, 1).map((r) => toTcpRoute(r, parent)) } };
}

/** Why a rule may send nothing anywhere (every backendRef weighs 0), or undefined. */
export function zeroWeightMessage(backends: readonly RouteBackend[]): string | undefined {
  return backends.length > 0 && backends.every((b) => b.weight === 0)
    ? 'every backendRef of the rule has weight 0: no backend may receive its requests'
    : undefined;
}

function toHttpRule(
  rule: Pick<OutboundHttpRouteRule, 'matches' | 'filters' | 'backends'>,
  timeouts: RouteTimeouts,
  retry: RouteRetry | undefined,
  parent: ParentContext,
  allowL5dRequestHeaders: boolean,
): outbound.HttpRoute_Rule {
  const zero = zeroWeightMessage(rule.backends);
  const backends: outbound.HttpRoute_Distribution =
    rule.backends.length === 0
      ? { kind: { $case: 'firstAvailable', value: { backends: [{ backend: parent.backend, filters: [] }] } } }
      : zero
        ? { kind: { $case: 'empty', value: {} } }
        : {
            kind: {
              $case: 'randomAvailable',
              value: { backends: rule.backends.map((b) => toHttpRouteBackend(b, parent)) },
            },
          };
  const filters = toHttpFilters(rule.filters, parent);
  if (zero) filters.push({ kind: { $case: 'failureInjector', value: { status: 500, message: zero } } });
  return {
    matches: rule.matches.map(toHttpMatch),
    filters,
    backends,
    ...(timeouts.requestMs !== undefined ? { requestTimeout: toDuration(timeouts.requestMs) } : {}),
    timeouts: toTimeouts(timeouts),
    ...(retry ? { retry: toRetry(retry) } : {}),
    allowL5dRequestHeaders,
  };
}

function toGrpcMatch(m: GrpcRouteMatch): grpcRoute.GrpcRouteMatch {
  return { rpc: { service: m.service ?? '', method: m.method ?? '' }, headers: m.headers.map(toHeaderMatch) };
}

function toGrpcRule(
  rule: OutboundGrpcRouteRule,
  timeouts: RouteTimeouts,
  retry: GrpcRouteRetry | undefined,
  parent: ParentContext,
  allowL5dRequestHeaders: boolean,
): outbound.GrpcRoute_Rule {
  const zero = zeroWeightMessage(rule.backends);
  const backends: outbound.GrpcRoute_Distribution =
    rule.backends.length === 0
      ? { kind: { $case: 'firstAvailable', value: { backends: [{ backend: parent.backend, filters: [] }] } } }
      : zero
        ? { kind: { $case: 'empty', value: {} } }
        : {
            kind: {
              $case: 'randomAvailable',
              value: { backends: rule.backends.map((b) => toGrpcRouteBackend(b, parent)) },
            },
          };
  const filters = toGrpcFilters(rule.filters, parent);
  if (zero) filters.push({ kind: { $case: 'failureInjector', value: { code: GRPC_UNAVAILABLE, message: zero } } });
  return {
    matches: rule.matches.map(toGrpcMatch),
    filters,
    backends,
    ...(timeouts.requestMs !== undefined ? { requestTimeout: toDuration(timeouts.requestMs) } : {}),
    timeouts: toTimeouts(timeouts),
    ...(retry ? { retry: toGrpcRetry(retry) } : {}),
    allowL5dRequestHeaders,
  };
}

function opaqueRoute(backend: outbound.Backend, name: string): outbound.OpaqueRoute {
  return {
    metadata: defaultMeta(name),
    rules: [
      { backends: { kind: { $case: 'firstAvailable', value: { backends: [{ backend, filters: [] }] } } }, filters: [] },
    ],
  };
}

/** A rule without timeouts (or retries) of its own takes the Service's. */
function own<T>(
  ruleTimeouts: RouteTimeouts,
  serviceTimeouts: RouteTimeouts,
  ruleRetry: T | undefined,
  serviceRetry: T | undefined,
) {
  return {
    timeouts: Object.keys(ruleTimeouts).length > 0 ? ruleTimeouts : serviceTimeouts,
    retry: ruleRetry ?? serviceRetry,
  };
}

function httpRoutes(policy: OutboundPolicy, parent: ParentContext, allow: boolean): outbound.HttpRoute[] {
  if (policy.httpRoutes.length === 0)
    return [
      {
        metadata: defaultMeta('http'),
        hosts: [],
        rules: [
          toHttpRule(
            {
              matches: [{ path: { kind: 'prefix', value: '/' }, headers: [], queryParams: [] }],
              filters: [],
              backends: [],
            },
            policy.timeouts,
            policy.retry,
            parent,
            allow,
          ),
        ],
      },
    ];
  return policy.httpRoutes.map((r) => ({
    metadata: routeMeta(r.ref),
    hosts: r.hostnames.map(toHostMatch),
    rules: r.rules.map((rule) => {
      const e = own(rule.timeouts, policy.timeouts, rule.retry, policy.retry);
      return toHttpRule(rule, e.timeouts, e.retry, parent, allow);
    }),
  }));
}

function grpcRoutes(policy: OutboundPolicy, parent: ParentContext, allow: boolean): outbound.GrpcRoute[] {
  return policy.grpcRoutes.map((r) => ({
    metadata: routeMeta(r.ref),
    hosts: r.hostnames.map(toHostMatch),
    rules: r.rules.map((rule) => {
      const e = own(rule.timeouts, policy.timeouts, rule.retry, policy.grpcRetry);
      return toGrpcRule(rule, e.timeouts, e.retry, parent, allow);
    }),
  }));
}

export function toProtoOutbound(
  policy: OutboundPolicy,
  opts: { allowL5dRequestHeaders?: boolean } = {},
): outbound.OutboundPolicy {
  const allow = opts.allowL5dRequestHeaders ?? false;
  const parent: ParentContext = { backend: serviceBackend(policy.service) };
  // As Linkerd's encoder: GRPCRoutes turn an HTTP/2 or undeclared port into a gRPC one (no detection);
  // an HTTP/1 port gets its HTTPRoutes only; an opaque port its oldest TCPRoute or no routes at all; an
  // undeclared port without GRPCRoutes or HTTPRoutes its TLSRoutes, else its TCPRoute, else detection.
  const grpc = policy.grpcRoutes.length > 0;
  const fa = toFailureAccrual(policy.failureAccrual);
  const accrual = fa ? { failureAccrual: fa } : {};
  let kind: outbound.ProxyProtocol['kind'];
  switch (policy.appProtocol) {
    case 'http1':
      kind = { $case: 'http1', value: { routes: httpRoutes(policy, parent, allow), ...accrual } };
      break;
    case 'http2':
      kind = grpc
        ? { $case: 'grpc', value: { routes: grpcRoutes(policy, parent, allow), ...accrual } }
        : { $case: 'http2', value: { routes: httpRoutes(policy, parent, allow), ...accrual } };
      break;
    case 'opaque':
      kind =
        policy.tcpRoutes.length > 0
          ? tcpProtocol(policy.tcpRoutes, parent)
          : { $case: 'opaque', value: { routes: [opaqueRoute(parent.backend, 'opaq')] } };
      break;
    case undefined:
      if (grpc) {
        kind = { $case: 'grpc', value: { routes: grpcRoutes(policy, parent, allow), ...accrual } };
        break;
      }
      if (policy.httpRoutes.length === 0 && policy.tlsRoutes.length > 0) {
        kind = tlsProtocol(policy.tlsRoutes, parent);
        break;
      }
      if (policy.httpRoutes.length === 0 && policy.tcpRoutes.length > 0) {
        kind = tcpProtocol(policy.tcpRoutes, parent);
        break;
      }
      kind = {
        $case: 'detect',
        value: {
          timeout: toDuration(DETECT_TIMEOUT_MS),
          opaque: { routes: [opaqueRoute(parent.backend, 'opaq')] },
          http1: { routes: httpRoutes(policy, parent, allow), ...accrual },
          http2: { routes: httpRoutes(policy, parent, allow), ...accrual },
        },
      };
  }
  const s = policy.service;
  return {
    metadata: resourceMeta({ group: 'core', kind: 'Service', name: s.name, namespace: s.namespace, port: s.port }),
    protocol: { kind },
  };
}

/** gRPC PERMISSION_DENIED: what a Deny EgressNetwork answers gRPC requests no route describes. */
const GRPC_PERMISSION_DENIED = 7;
/** The failure injectors' message for denied egress (Linkerd's). */
export const EGRESS_DENIED_MESSAGE = 'traffic not allowed';

/**
 * Traffic to an address an EgressNetwork classifies, as Linkerd's controller encodes it
 * (policy-controller/grpc/src/outbound{,/http,/grpc,/tcp}.rs, linkerd2 edge-26.8.3, read on
 * 2026-11-28): the EgressNetwork is the parent (metadata group policy.minimesh.io, kind EgressNetwork,
 * its namespace, name and the port); its default backend forwards to the original destination; the
 * routes attached to it come first, each rule without backendRefs forwarding to the original
 * destination, and after them a default route that matches every request: `http-egress-allow`
 * (`grpc-egress-allow`) forwards it, `http-egress-deny` answers 403 (`grpc-egress-deny`:
 * PERMISSION_DENIED) "traffic not allowed". Opaque traffic gets one route, `tcp-egress-allow`
 * (forward) or `tcp-egress-deny` (Forbidden: the connection is refused). The proxy picks the most
 * specific match, so an attached route's rule wins over the default route even under Deny. A port
 * TLSRoutes hold (and no GRPCRoute or HTTPRoute) is TLS by SNI, `tls-egress-allow|deny` last; one a
 * TCPRoute holds is opaque with that route alone (tlsProtocol, tcpProtocol).
 */
export function toProtoEgress(
  policy: EgressPolicy,
  dst: { ip: string; port: number },
  opts: { allowL5dRequestHeaders?: boolean } = {},
): outbound.OutboundPolicy {
  const allow = opts.allowL5dRequestHeaders ?? false;
  const e = policy.egress;
  const deny = e.trafficPolicy === 'Deny';
  const metadata = resourceMeta({
    group: POLICY_GROUP,
    kind: 'EgressNetwork',
    name: e.name,
    namespace: e.namespace,
    port: e.port,
  });
  const parent: ParentContext = {
    backend: {
      metadata,
      queue: QUEUE,
      kind: { $case: 'forward', value: { addr: toTcpAddress(dst.ip, dst.port), weight: 1, metricLabels: {} } },
    },
    egress: { namespace: e.namespace, name: e.name },
    dst,
  };
  const opaque = egressL4Default('tcp', parent, deny);
  const answer = (kind: outbound.ProxyProtocol['kind']): outbound.OutboundPolicy => ({ metadata, protocol: { kind } });
  // An opaque port: its oldest TCPRoute, else the default route. Otherwise, as Linkerd's encoder for a
  // parent without an appProtocol, the first kind that has routes: GRPCRoutes, HTTPRoutes (below),
  // TLSRoutes, TCPRoutes; none at all: detection with the default routes.
  if (policy.opaque)
    return answer(
      policy.tcpRoutes.length > 0
        ? tcpProtocol(policy.tcpRoutes, parent)
        : { $case: 'opaque', value: { routes: [opaque] } },
    );
  if (policy.grpcRoutes.length === 0 && policy.httpRoutes.length === 0) {
    if (policy.tlsRoutes.length > 0) return answer(tlsProtocol(policy.tlsRoutes, parent, deny));
    if (policy.tcpRoutes.length > 0) return answer(tcpProtocol(policy.tcpRoutes, parent));
  }
  const everything = {
    matches: [{ path: { kind: 'prefix' as const, value: '/' }, headers: [], queryParams: [] }],
    filters: [],
    backends: [],
  };
  if (policy.grpcRoutes.length > 0) {
    const fallback = toGrpcRule(
      { matches: [{ headers: [] }], filters: [], backends: [], timeouts: {} },
      {},
      undefined,
      parent,
      allow,
    );
    if (deny)
      fallback.filters.push({
        kind: { $case: 'failureInjector', value: { code: GRPC_PERMISSION_DENIED, message: EGRESS_DENIED_MESSAGE } },
      });
    const routes: outbound.GrpcRoute[] = [
      ...policy.grpcRoutes.map((r) => ({
        metadata: routeMeta(r.ref),
        hosts: r.hostnames.map(toHostMatch),
        rules: r.rules.map((rule) => toGrpcRule(rule, rule.timeouts, rule.retry, parent, allow)),
      })),
      { metadata: defaultMeta(deny ? 'grpc-egress-deny' : 'grpc-egress-allow'), hosts: [], rules: [fallback] },
    ];
    return { metadata, protocol: { kind: { $case: 'grpc', value: { routes } } } };
  }
  const fallback = toHttpRule(everything, {}, undefined, parent, allow);
  if (deny)
    fallback.filters.push({
      kind: { $case: 'failureInjector', value: { status: 403, message: EGRESS_DENIED_MESSAGE } },
    });
  const routes: outbound.HttpRoute[] = [
    ...policy.httpRoutes.map((r) => ({
      metadata: routeMeta(r.ref),
      hosts: r.hostnames.map(toHostMatch),
      rules: r.rules.map((rule) => toHttpRule(rule, rule.timeouts, rule.retry, parent, allow)),
    })),
    { metadata: defaultMeta(deny ? 'http-egress-deny' : 'http-egress-allow'), hosts: [], rules: [fallback] },
  ];
  return {
    metadata,
    protocol: {
      kind: {
        $case: 'detect',
        value: {
          timeout: toDuration(DETECT_TIMEOUT_MS),
          opaque: { routes: [opaque] },
          http1: { routes },
          http2: { routes },
        },
      },
    },
  };
}

/** An address outside the cluster networks: forward to it as it is (Linkerd's "egress-fallback"). */
export function toFallbackPolicy(addr: { ip: string; port: number }): outbound.OutboundPolicy {
  const backend: outbound.Backend = {
    metadata: defaultMeta('egress-fallback'),
    queue: QUEUE,
    kind: { $case: 'forward', value: { addr: toTcpAddress(addr.ip, addr.port), weight: 1, metricLabels: {} } },
  };
  const route: outbound.HttpRoute = {
    metadata: defaultMeta('egress-fallback'),
    hosts: [],
    rules: [
      {
        matches: [{ headers: [], queryParams: [] }],
        filters: [],
        backends: { kind: { $case: 'firstAvailable', value: { backends: [{ backend, filters: [] }] } } },
        allowL5dRequestHeaders: false,
      },
    ],
  };
  return {
    metadata: defaultMeta('egress-fallback'),
    protocol: {
      kind: {
        $case: 'detect',
        value: {
          timeout: toDuration(DETECT_TIMEOUT_MS),
          opaque: { routes: [opaqueRoute(backend, 'egress-fallback')] },
          http1: { routes: [route] },
          http2: { routes: [route] },
        },
      },
    },
  };
}

/** A Service cluster IP on a port the Service does not define: connections are refused. */
export function toUndefinedPortPolicy(svc: { namespace: string; name: string; port: number }): outbound.OutboundPolicy {
  return {
    metadata: resourceMeta({
      group: 'core',
      kind: 'Service',
      name: svc.name,
      namespace: svc.namespace,
      port: svc.port,
    }),
    protocol: {
      kind: {
        $case: 'opaque',
        value: {
          routes: [
            {
              metadata: defaultMeta('undefined-port'),
              rules: [
                {
                  backends: { kind: { $case: 'empty', value: {} } },
                  filters: [{ kind: { $case: 'forbidden', value: {} } }],
                },
              ],
            },
          ],
        },
      },
    },
  };
}
