// @minimesh/policy: the policy controller (Linkerd's policy API over policy.minimesh.io resources).
export {
  PolicyIndex,
  type PolicyIndexOptions,
  type PolicyListener,
  type Subscription,
  type WorkloadKind,
} from './index/policy-index.js';
export {
  ResourceStore,
  INDEXED_KINDS,
  ROUTE_KINDS,
  type IndexedKind,
  type RouteKind,
  type InvalidResource,
} from './index/store.js';
export {
  computeInbound,
  serversForPort,
  serverSelects,
  serverPorts,
  resolvePolicy,
  type InboundResult,
  type Ignored,
} from './index/inbound.js';
export { computeOutbound, lookupServiceIp, type ServiceTarget } from './index/outbound.js';
export {
  attachedRoutes,
  serviceParentVerdict,
  refsVerdict,
  REASONS as ROUTE_REASONS,
  type AttachedRoutes,
  type ParentVerdict,
} from './index/route-attachment.js';
export {
  routeStatusUpdates,
  statusPath,
  CONTROLLER_NAME,
  type RouteStatusUpdate,
  type RouteParentStatus,
  type RouteCondition,
} from './status/route-status.js';
export { RouteStatusWriter, type RouteStatusWriterOptions } from './status/status-writer.js';
export type * from './model.js';
export { DEFAULT_POLICIES } from './model.js';
export {
  serviceAccountIdentity,
  namespaceIdentity,
  serviceAuthority,
  DEFAULT_CLUSTER_NETWORKS,
  type ClusterInfo,
} from './cluster-info.js';
export {
  defaultAuthorizations,
  parseDefaultPolicy,
  isDefaultPolicy,
  requireIdentity,
  ALL_NETWORKS,
} from './defaults.js';
export * from './describe.js';
export {
  POLICY_GROUP,
  GATEWAY_GROUP,
  RESOURCE_KINDS,
  resourcePath,
  type PolicyResourceKind,
} from './resources/kinds.js';
export { WORKLOAD_ANNOTATIONS, toPodWorkload, toExternalWorkload, type WorkloadRecord } from './resources/workload.js';
export { ANNOTATIONS as ROUTE_ANNOTATIONS } from './resources/http-route.js';
export { parseLabelSelector, selectorMatches, formatSelector, type LabelSelector } from './resources/selector.js';
export { toProtoServer, toProtoAuthz } from './server/inbound-translator.js';
export { toProtoOutbound, toFallbackPolicy, toUndefinedPortPolicy } from './server/outbound-translator.js';
export {
  createInboundHandlers,
  createOutboundHandlers,
  parseServiceAuthority,
  toGrpcStatus,
  type PolicyServerOptions,
} from './server/policy-server.js';
export { parseWorkloadRef, type WorkloadRef } from './server/workload-ref.js';
export { createPolicyMetrics, type PolicyMetrics } from './metrics.js';
export { PolicyError, type PolicyErrorCode } from './errors.js';
export { TEST_CLUSTER } from './testing.js';
export { policyCrds, renderCrdTemplate, CRD_TEMPLATE_PATH, type CustomResourceDefinition } from './crds.js';
export { POLICY_PORTS } from './cluster-info.js';
export { authzReport, formatAuthzReport, reportPorts, type AuthzReport, type PortReport } from './report.js';
export {
  explainInboundPolicy,
  type PolicyExplanation,
  type PolicyOutcome,
  type ExplainClient,
  type ExplainRequest,
} from './explain.js';
