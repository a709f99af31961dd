// What a client is told about a Service port: its protocol, the routes attached to it (HTTPRoutes of
// both API groups, or the GRPCRoutes, TLSRoutes or TCPRoutes that win the port; route-attachment.ts
// decides which), each rule's matches, filters, backends, timeouts and retries. Pure functions of the store, as Linkerd's
// outbound index.
import { serviceAuthority } from '../cluster-info.js';
import type {
  GrpcFilter,
  HttpFilter,
  OutboundGrpcRoute,
  OutboundHttpRoute,
  OutboundPolicy,
  OutboundTcpRoute,
  OutboundTlsRoute,
  RouteBackend,
  RouteRef,
  RouteTimeouts,
} from '../model.js';
import type { GrpcRouteSpec, GrpcSpecFilter } from '../resources/grpc-route.js';
import type { HttpRouteSpec, SpecFilter } from '../resources/http-route.js';
import type { BackendRefSpec } from '../resources/route-parts.js';
import { serviceAppProtocol, type ServiceRecord } from '../resources/service.js';
import type { TcpRouteSpec, TlsRouteSpec } from '../resources/tls-tcp-route.js';
import { attachedRoutes, backendProblem, isEgressBackend } from './route-attachment.js';
import type { ResourceStore } from './store.js';

export interface ServiceTarget {
  namespace: string;
  name: string;
  port: number;
}

/** The Service owning a cluster IP, and whether it defines the port. */
export function lookupServiceIp(
  store: ResourceStore,
  ip: string,
  port: number,
): { service: ServiceRecord; portDefined: boolean } | undefined {
  const [svc] = store.servicesWithIp(ip);
  return svc && { service: svc, portDefined: svc.ports.some((p) => p.port === port) };
}

export function computeOutbound(
  store: ResourceStore,
  svc: ServiceRecord,
  port: number,
  sourceNamespace: string,
): OutboundPolicy {
  const cluster = store.cluster;
  const target = { namespace: svc.namespace, name: svc.name, port };
  const appProtocol = serviceAppProtocol(svc, port, cluster.defaultOpaquePorts);
  const attached = attachedRoutes(store, target, sourceNamespace);
  return {
    service: { ...target, authority: serviceAuthority(cluster, svc.namespace, svc.name, port) },
    ...(appProtocol ? { appProtocol } : {}),
    httpRoutes: attached.http.map(({ kind, spec }) => toOutboundHttpRoute(store, spec, routeRef(kind, spec))),
    grpcRoutes: attached.grpc.map((r) => toOutboundGrpcRoute(store, r)),
    tlsRoutes: attached.tls.map((r) => toOutboundTlsRoute(store, r)),
    tcpRoutes: attached.tcp.map((r) => toOutboundTcpRoute(store, r)),
    timeouts: svc.timeouts,
    ...(svc.retry ? { retry: svc.retry } : {}),
    ...(svc.grpcRetry ? { grpcRetry: svc.grpcRetry } : {}),
    ...(svc.failureAccrual ? { failureAccrual: svc.failureAccrual } : {}),
  };
}

export function routeRef(
  kind: 'HTTPRoute' | 'GatewayHTTPRoute' | 'GRPCRoute' | 'TLSRoute' | 'TCPRoute',
  r: HttpRouteSpec | GrpcRouteSpec | TlsRouteSpec | TcpRouteSpec,
): RouteRef {
  return {
    kind: 'resource',
    group: r.group,
    resourceKind: kind === 'GatewayHTTPRoute' ? 'HTTPRoute' : kind,
    name: r.meta.name,
    namespace: r.meta.namespace,
  };
}

/**
 * A backendRef as the proxy gets it: a Service port (maybe missing: 500s), an EgressNetwork (the
 * translator resolves it against the parent), or an invalid backend (500s). The one home of this for
 * every route kind.
 */
function toBackend(store: ResourceStore, b: BackendRefSpec, filters: HttpFilter[]): RouteBackend {
  if (isEgressBackend(b))
    return {
      kind: 'egress',
      name: b.name,
      namespace: b.namespace,
      ...(b.port !== undefined ? { port: b.port } : {}),
      weight: b.weight,
      exists: store.get('EgressNetwork', b.namespace, b.name) !== undefined,
      filters,
    };
  const problem = backendProblem(store, b);
  if (problem && problem.reason === 'InvalidKind')
    return { kind: 'invalid', weight: b.weight, message: `unsupported backend type ${b.group || 'core'} ${b.kind}` };
  if (b.port === undefined)
    return { kind: 'invalid', weight: b.weight, message: `missing port for backend Service ${b.name}` };
  const svc = store.get('Service', b.namespace, b.name);
  if (svc && !svc.ports.some((p) => p.port === b.port))
    return { kind: 'invalid', weight: b.weight, message: `Service ${b.namespace}/${b.name} has no port ${b.port}` };
  return {
    kind: 'service',
    name: b.name,
    namespace: b.namespace,
    port: b.port,
    authority: serviceAuthority(store.cluster, b.namespace, b.name, b.port),
    weight: b.weight,
    exists: svc !== undefined,
    filters,
  };
}

function toFilters(store: ResourceStore, list: readonly SpecFilter[]): HttpFilter[] {
  return list.map((f): HttpFilter => {
    if (f.kind !== 'requestMirror') return f;
    return {
      kind: 'requestMirror',
      mirror: {
        backend: toBackend(store, f.ref, []),
        ...(f.fraction ? { fraction: f.fraction } : {}),
      },
    };
  });
}

export function toOutboundHttpRoute(store: ResourceStore, r: HttpRouteSpec, ref: RouteRef): OutboundHttpRoute {
  return {
    ref,
    hostnames: r.hostnames,
    rules: r.rules.map((rule) => {
      const timeouts: RouteTimeouts = { ...r.timeouts };
      // The annotation wins over the rule's timeouts.request; zero means no timeout (GEP-1742).
      if (timeouts.requestMs === undefined && rule.requestTimeoutMs !== undefined && rule.requestTimeoutMs > 0)
        timeouts.requestMs = rule.requestTimeoutMs;
      let retry = r.retry;
      const backendMs = rule.backendRequestTimeoutMs;
      if (backendMs !== undefined && backendMs > 0) {
        // timeouts.backendRequest bounds each attempt: the retry's per-try timeout, or, without retries,
        // the one attempt (the request timeout, when that is not shorter already).
        if (retry) retry = { ...retry, timeoutMs: retry.timeoutMs ?? backendMs };
        else if (timeouts.requestMs === undefined || timeouts.requestMs > backendMs) timeouts.requestMs = backendMs;
      }
      return {
        matches: rule.matches,
        filters: toFilters(store, rule.filters),
        backends: rule.backendRefs.map((b) => toBackend(store, b, toFilters(store, b.filters))),
        timeouts,
        ...(retry ? { retry } : {}),
      };
    }),
  };
}

export function toOutboundGrpcRoute(store: ResourceStore, r: GrpcRouteSpec): OutboundGrpcRoute {
  const filters = (list: readonly GrpcSpecFilter[]) => toFilters(store, list) as GrpcFilter[];
  return {
    ref: routeRef('GRPCRoute', r),
    hostnames: r.hostnames,
    rules: r.rules.map((rule) => ({
      matches: rule.matches,
      filters: filters(rule.filters),
      backends: rule.backendRefs.map((b) => toBackend(store, b, filters(b.filters))),
      timeouts: { ...r.timeouts },
      ...(r.retry ? { retry: r.retry } : {}),
    })),
  };
}

/** A TLSRoute's one rule: its SNI matches and backends (no filters: the kind has none). */
export function toOutboundTlsRoute(store: ResourceStore, r: TlsRouteSpec): OutboundTlsRoute {
  return {
    ref: routeRef('TLSRoute', r),
    hostnames: r.hostnames,
    backends: r.rules[0].backendRefs.map((b) => toBackend(store, b, [])),
  };
}

/** A TCPRoute's one rule: its backends. */
export function toOutboundTcpRoute(store: ResourceStore, r: TcpRouteSpec): OutboundTcpRoute {
  return {
    ref: routeRef('TCPRoute', r),
    backends: r.rules[0].backendRefs.map((b) => toBackend(store, b, [])),
  };
}

/**
 * The effective timeouts and retry of a rule: its own, or else the Service's (as Linkerd applies the
 * Service's annotations to rules that set none).
 */
export function effectiveRule(
  policy: OutboundPolicy,
  rule: { timeouts: RouteTimeouts; retry?: OutboundPolicy['retry'] },
): { timeouts: RouteTimeouts; retry?: OutboundPolicy['retry'] } {
  const timeouts = Object.keys(rule.timeouts).length > 0 ? rule.timeouts : policy.timeouts;
  const retry = rule.retry ?? policy.retry;
  return { timeouts, ...(retry ? { retry } : {}) };
}
