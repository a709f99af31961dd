// @minimesh/local-cluster: a real Kubernetes API on this machine (kube-apiserver, etcd and
// kube-controller-manager built from the Go module proxy, in a node network namespace) and a node
// agent that runs pods as processes in network namespaces.
export {
  ensureCluster,
  stopCluster,
  up as startCluster,
  isHealthy,
  componentStatus,
  clusterInfo,
  adminClient,
  type ClusterInfo,
  type ComponentStatus,
} from './cluster.js';
export {
  createServiceAccountToken,
  kubeconfigForServiceAccount,
  type TokenOptions,
  type ServiceAccountRef,
} from './tokens.js';
export { readAuditEvents, type AuditEvent } from './audit.js';
export {
  forwardToNode,
  exposeHostPort,
  execInPod,
  podNetnsName,
  dialNode,
  type Forward,
  type Exposure,
  type ExecResult,
} from './forward.js';
export {
  createKubeClient,
  renderKubeconfig,
  KubeApiError,
  type KubeClient,
  type KubeCredentials,
  type KubeObject,
  type WatchEvent,
} from './kube-client.js';
export { createNamespace } from './namespaces.js';
export { IMAGE_TABLE, resolveImage, type ImageEntry } from './images.js';
export {
  API_SERVER,
  NODE_IP,
  NODE_NETNS,
  NODE_NAME,
  CLUSTER_CIDR,
  SERVICE_CIDR,
  K8S_VERSION,
  SA_ISSUER,
  stateDir,
  binDir,
} from './paths.js';
