// @minimesh/destination: service discovery for minimesh proxies.
export { startDestination, type Destination, type DestinationOptions } from './destination.js';
export {
  EndpointIndex,
  resolveTargetPort,
  type ServiceTarget,
  type ResolvedEndpoint,
  type EndpointListener,
  type Address,
  type ResourceKind,
} from './index/endpoint-index.js';
export {
  createResourceInformers,
  metricsHooks,
  RESOURCE_PATHS,
  EXTERNAL_WORKLOAD_API,
  type ResourceInformers,
} from './k8s/resource-informers.js';
export * from './k8s/records.js';
export { LeaseElector, toMicroTime, type LeaseElectorOptions } from '@minimesh/kube';
export {
  ExternalWorkloadMirror,
  toDesiredSlices,
  MIRROR_MANAGER,
  type SliceManifest,
} from './leader/external-workload-mirror.js';
export {
  parseAuthority,
  parseServiceAuthority,
  parseContextToken,
  type ParsedAuthority,
  type ContextToken,
} from './server/authority.js';
export {
  toWeightedAddr,
  toAddUpdate,
  toRemoveUpdate,
  toNoEndpointsUpdate,
  ENDPOINT_WEIGHT,
  type TranslatorOptions,
} from './server/endpoint-translator.js';
export { toProfile, serviceFqdn } from './server/profile-translator.js';
export { createDestinationHandlers, destinationServiceDefinition, toGrpcStatus } from './server/destination-server.js';
export { createDestinationMetrics, type DestinationMetrics } from './metrics.js';
export { DestinationError, type DestinationErrorCode } from './errors.js';
