// @minimesh/policy/client: inbound authorization and HTTP route matching over the proxy API's form,
// for proxies (a small module graph: no gRPC server, no Kubernetes) and for `minimesh explain`.
export {
  compileServerPolicy,
  compileDefaultPolicy,
  authorizeConnection,
  authorizeRequest,
  metaFromProto,
  type PolicyMeta,
  type ClientInfo,
  type CompiledAuthz,
  type CompiledInboundRoute,
  type CompiledServerPolicy,
  type InboundProtocolKind,
  type InboundRouteFilter,
  type RequestDecision,
  parseClientIp,
  // The name minimesh-proxy imports until it moves to parseClientIp (the proxy is rebuilt in its own branch).
  parseClientIp as ipToBigint,
} from './server-policy.js';
export {
  compileMatch,
  compileHosts,
  findRoute,
  hostScore,
  pathHasPrefix,
  requestView,
  type RequestView,
  type CompiledMatch,
  type CompiledRouteBase,
  type HostMatcher,
} from './http-match.js';
export {
  compileOutboundPolicy,
  routeOutbound,
  isRetryableStatus,
  isRetryableGrpc,
  type CompiledHeaderEdit,
  type CompiledPathReplace,
  type CompiledRouteFilter,
  type CompiledOutboundPolicy,
  type CompiledOutboundRoute,
  type CompiledOutboundRule,
  type CompiledRetry,
  type CompiledTimeouts,
  type CompiledBackend,
  type ResourceRef,
} from './outbound-policy.js';
export { fromIpNetwork } from './ip-network.js';
