// The policy model: what the index computes for a workload's port (inbound) or a Service's port
// (outbound). Plain, JSON-serializable data with a canonical order, so two answers are equal exactly
// when their JSON is equal. server/ translates it to the proxy API; the CLI explains it to people.

import { DEFAULT_INBOUND_POLICIES, type DefaultInboundPolicy } from '@minimesh/config';

/** Linkerd's default policy names (proxy.defaultInboundPolicy, config.minimesh.io/default-inbound-policy). */
export const DEFAULT_POLICIES = DEFAULT_INBOUND_POLICIES;
export type DefaultPolicyName = DefaultInboundPolicy;

/** A client network ("10.0.0.0/8"), minus exceptions. */
export interface NetworkMatch {
  net: string;
  except: string[];
}

/** What a client must prove: nothing, mesh TLS, or mesh TLS with a matching identity. */
export type ClientAuthentication =
  | { kind: 'unauthenticated' }
  | { kind: 'tls-unauthenticated' }
  /** identities: whole names; suffixes: label lists ([] matches every identity). */
  | { kind: 'tls-authenticated'; identities: string[]; suffixes: string[][] };

/** Where an authorization comes from: a default policy ("all-unauthenticated", "probe") or a resource. */
export type AuthorizationRef = { kind: 'default'; name: string } | { kind: 'authorizationpolicy'; name: string };

export interface ClientAuthorization {
  ref: AuthorizationRef;
  networks: NetworkMatch[];
  authentication: ClientAuthentication;
}

export type ServerRef = { kind: 'default'; name: DefaultPolicyName } | { kind: 'server'; name: string };

export type InboundProtocol =
  | { kind: 'detect'; timeoutMs: number }
  | { kind: 'http1' }
  | { kind: 'http2' }
  | { kind: 'grpc' }
  | { kind: 'opaque' }
  | { kind: 'tls' };

export type PathMatch = { kind: 'exact' | 'prefix' | 'regex'; value: string };
export interface HeaderMatch {
  name: string;
  kind: 'exact' | 'regex';
  value: string;
}
export interface QueryParamMatch {
  name: string;
  kind: 'exact' | 'regex';
  value: string;
}
/** Every condition that is set must hold. */
export interface HttpRouteMatch {
  path?: PathMatch;
  headers: HeaderMatch[];
  queryParams: QueryParamMatch[];
  /** Upper-case method name. */
  method?: string;
}

/** "web.example.com", or "*.example.com" as { suffix, reverseLabels: ["com", "example"] }. */
export type HostMatch = { kind: 'exact'; value: string } | { kind: 'suffix'; reverseLabels: string[] };

export interface HeaderValue {
  name: string;
  value: string;
}
export interface HeaderModifier {
  add: HeaderValue[];
  set: HeaderValue[];
  remove: string[];
}
export interface RequestRedirect {
  scheme?: string;
  hostname?: string;
  path?: { kind: 'full' | 'prefix'; value: string };
  port?: number;
  statusCode?: number;
}
/** The Gateway API URLRewrite filter: the request's host and/or path change on the way to the backend. */
export interface UrlRewrite {
  hostname?: string;
  path?: { kind: 'full' | 'prefix'; value: string };
}
/** The Gateway API RequestMirror filter: a copy of (a share of) the requests goes to another backend too. */
export interface RequestMirror {
  backend: RouteBackend;
  /** The share mirrored; absent: every request. */
  fraction?: { numerator: number; denominator: number };
}
export type HttpFilter =
  | { kind: 'requestHeaderModifier'; modifier: HeaderModifier }
  | { kind: 'responseHeaderModifier'; modifier: HeaderModifier }
  | { kind: 'requestRedirect'; redirect: RequestRedirect }
  | { kind: 'urlRewrite'; rewrite: UrlRewrite }
  | { kind: 'requestMirror'; mirror: RequestMirror };
/** What a GRPCRoute rule or backend may carry (a subset of the HTTP filters). */
export type GrpcFilter = Extract<
  HttpFilter,
  { kind: 'requestHeaderModifier' | 'responseHeaderModifier' | 'requestMirror' }
>;

/** A GRPCRoute match: the service and method (absent: any) and headers that must all hold. */
export interface GrpcRouteMatch {
  service?: string;
  method?: string;
  headers: HeaderMatch[];
}

/** A route's identity: a default route ("default", "probe", "http") or an HTTPRoute resource. */
export type RouteRef =
  | { kind: 'default'; name: string }
  | { kind: 'resource'; group: string; resourceKind: string; name: string; namespace?: string };

export interface InboundHttpRoute {
  ref: RouteRef;
  hostnames: HostMatch[];
  rules: Array<{ matches: HttpRouteMatch[]; filters: HttpFilter[] }>;
  /** The route's own authorizations; the server's apply to it too. */
  authorizations: ClientAuthorization[];
}

/** An HTTPLocalRateLimitPolicy as a Server's proxies are told it: requests per second. */
export interface InboundRateLimit {
  /** The policy (namespace/name). */
  name: string;
  namespace: string;
  total?: number;
  identity?: number;
  /** Per-client limits: the client identities each applies to. */
  overrides: Array<{ requestsPerSecond: number; identities: string[] }>;
}

/** The policy of one workload port, as proxies are told it. */
export interface InboundServer {
  ref: ServerRef;
  protocol: InboundProtocol;
  authorizations: ClientAuthorization[];
  httpRoutes: InboundHttpRoute[];
  /** The Server's HTTP rate limit (the oldest HTTPLocalRateLimitPolicy targeting it); absent: none. */
  rateLimit?: InboundRateLimit;
}

export interface RouteTimeouts {
  requestMs?: number;
  responseMs?: number;
  idleMs?: number;
}

export interface RouteRetry {
  limit: number;
  timeoutMs?: number;
  /** HTTP status ranges that are retried; absent: the proxy's default conditions. */
  statusRanges?: Array<{ min: number; max: number }>;
}

/** gRPC statuses a route may retry (retry.minimesh.io/grpc), as Linkerd names them. */
export const GRPC_RETRY_CONDITIONS = [
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
] as const;
export type GrpcRetryCondition = (typeof GRPC_RETRY_CONDITIONS)[number];

export interface GrpcRouteRetry {
  limit: number;
  timeoutMs?: number;
  /** Absent: the proxy's default conditions. */
  conditions?: GrpcRetryCondition[];
}

/**
 * Circuit breaking of a Service's endpoints (balancer.linkerd.io/failure-accrual: consecutive): an
 * endpoint that fails `maxFailures` requests in a row is left out for a penalty that starts at
 * `minPenaltyMs`, grows exponentially to `maxPenaltyMs` while probes fail, with up to `jitterRatio`
 * of it added at random.
 */
export interface FailureAccrual {
  kind: 'consecutive';
  maxFailures: number;
  minPenaltyMs: number;
  maxPenaltyMs: number;
  jitterRatio: number;
}

export type RouteBackend =
  | {
      kind: 'service';
      name: string;
      namespace: string;
      port: number;
      /** <name>.<namespace>.svc.<cluster-domain>:<port>, the Destination.Get path. */
      authority: string;
      weight: number;
      /** False when the Service (or its port) does not exist: requests to it fail with 500. */
      exists: boolean;
      filters: HttpFilter[];
    }
  /**
   * An EgressNetwork backendRef (policy.minimesh.io): on a route whose parent is that EgressNetwork,
   * traffic goes on to the original destination (the address the client dialled); anywhere else, or
   * when it does not exist, the backend is invalid. Which it is, the translator decides with the parent.
   */
  | {
      kind: 'egress';
      name: string;
      namespace: string;
      /** The backendRef's port, if it names one (the backend's metadata port; else the original one). */
      port?: number;
      weight: number;
      exists: boolean;
      filters: HttpFilter[];
    }
  | { kind: 'invalid'; weight: number; message: string };

/**
 * A TLSRoute as clients see it: its SNI matches (empty: every SNI) and its one rule's backends (empty:
 * the parent itself, for an EgressNetwork the original destination).
 */
export interface OutboundTlsRoute {
  ref: RouteRef;
  hostnames: HostMatch[];
  backends: RouteBackend[];
}

/** A TCPRoute as clients see it: its one rule's backends (empty: the parent itself). */
export interface OutboundTcpRoute {
  ref: RouteRef;
  backends: RouteBackend[];
}

export interface OutboundHttpRouteRule {
  matches: HttpRouteMatch[];
  filters: HttpFilter[];
  /** Empty: the parent Service itself. */
  backends: RouteBackend[];
  timeouts: RouteTimeouts;
  retry?: RouteRetry;
}

export interface OutboundHttpRoute {
  ref: RouteRef;
  hostnames: HostMatch[];
  rules: OutboundHttpRouteRule[];
}

export interface OutboundGrpcRouteRule {
  matches: GrpcRouteMatch[];
  filters: GrpcFilter[];
  /** Empty: the parent Service itself. */
  backends: RouteBackend[];
  timeouts: RouteTimeouts;
  retry?: GrpcRouteRetry;
}

export interface OutboundGrpcRoute {
  ref: RouteRef;
  hostnames: HostMatch[];
  rules: OutboundGrpcRouteRule[];
}

/** A Service port as clients see it: protocol handling, routes, and the default backend. */
export interface OutboundPolicy {
  service: { namespace: string; name: string; port: number; authority: string };
  /** From the Service port's appProtocol or the opaque-ports annotation; undefined: detect. */
  appProtocol?: 'http1' | 'http2' | 'opaque';
  /**
   * HTTPRoutes of both API groups attached to the port, oldest first (consumer routes of the client's
   * namespace win over producer routes); empty when GRPCRoutes are attached (they win the port).
   */
  httpRoutes: OutboundHttpRoute[];
  /** GRPCRoutes attached to the port, oldest first. */
  grpcRoutes: OutboundGrpcRoute[];
  /** TLSRoutes attached to the port, oldest first; empty when GRPCRoutes or HTTPRoutes are. */
  tlsRoutes: OutboundTlsRoute[];
  /** TCPRoutes attached to the port, oldest first; empty when routes of another kind are. */
  tcpRoutes: OutboundTcpRoute[];
  /** Service-level defaults from timeout.minimesh.io/* and retry.minimesh.io/* annotations. */
  timeouts: RouteTimeouts;
  retry?: RouteRetry;
  grpcRetry?: GrpcRouteRetry;
  /** From the Service's failure-accrual annotations; absent: no circuit breaking. */
  failureAccrual?: FailureAccrual;
}

/** An EgressNetwork's traffic policy for what no route attached to it describes. */
export type EgressTrafficPolicy = 'Allow' | 'Deny';

/**
 * Traffic to an address outside the cluster networks that an EgressNetwork classifies, as clients see
 * it: the EgressNetwork (the parent), the port, the routes attached to it, and what happens to the rest.
 */
export interface EgressPolicy {
  egress: { namespace: string; name: string; port: number; trafficPolicy: EgressTrafficPolicy };
  /** The port is one of the default opaque ports: TCP only, no routes. */
  opaque: boolean;
  /** HTTPRoutes of both API groups attached to the EgressNetwork port, oldest first; empty when GRPCRoutes are. */
  httpRoutes: OutboundHttpRoute[];
  /** GRPCRoutes attached to the EgressNetwork port, oldest first. */
  grpcRoutes: OutboundGrpcRoute[];
  /** TLSRoutes attached to the EgressNetwork port, oldest first; empty when GRPCRoutes or HTTPRoutes are. */
  tlsRoutes: OutboundTlsRoute[];
  /** TCPRoutes attached to the EgressNetwork port, oldest first; empty when routes of another kind are. */
  tcpRoutes: OutboundTcpRoute[];
}

/** What a client is told about an address outside the cluster networks: its EgressNetwork, or none. */
export type EgressAnswer = { kind: 'egress'; policy: EgressPolicy } | { kind: 'fallback' };
