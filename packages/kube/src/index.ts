// @minimesh/kube: the one way minimesh programs talk to Kubernetes — the kubeconfig loader, the API
// client (one reused connection, QPS/burst), the informer (list+watch). The in-memory fake with the
// same interface is in @minimesh/kube/testing.
export {
  loadKubeConfig,
  parseKubeConfig,
  inCluster,
  SERVICE_ACCOUNT_DIR,
  type KubeConfig,
  type LoadKubeConfigOptions,
  type AuthSpec,
  type ExecSpec,
} from './kubeconfig.js';
export {
  createKubeClient,
  DEFAULT_RATE_LIMIT,
  type KubeClient,
  type KubeClientOptions,
  type KubeClientStats,
  type ApiResponse,
  type RequestOptions,
  type WatchQuery,
  type WatchEventType,
  type WatchEnd,
} from './client.js';
export { TokenBucket, type RateLimit } from './rate-limit.js';
export {
  Informer,
  InformerStore,
  keyOfObject,
  type InformerOptions,
  type InformerHandler,
  type InformerHooks,
} from './informer.js';
export { cacheReadiness, type CacheReadiness, type SyncedCache } from './cache-readiness.js';
export { kubeFlags, parseKubeFlags, kubeClientFromFlags, type KubeFlagValues } from './flags.js';
export { KubeError, KubeConfigError, KubeApiError, statusMessage, statusReason, type KubeErrorCode } from './errors.js';
export { LeaseElector, toMicroTime, type LeaseElectorOptions } from './lease-elector.js';
export { leaseFlags, parseLeaseFlags, type LeaseFlagValues, type LeaseTimings } from './lease-flags.js';
