// @minimesh/local-cluster: a real Kubernetes cluster on this machine: one node in a network
// namespace (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy
// built from the Go module proxy; Debian's containerd, runc and CNI plugins; CoreDNS), running pods
// from the images scripts/images.sh builds.
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
export { ComponentError } from './wait.js';
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
  podSandboxPid,
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
export {
  ensureSimulatedNodes,
  removeSimulatedNodes,
  buildKwok,
  kwokPaths,
  simulatedNode,
  simulatedNodeName,
  KWOK_VERSION,
  SIMULATED_NODE_LABELS,
  SIMULATED_NODE_TAINT,
  SIMULATED_NODE_TOLERATION,
  SIMULATED_POD_CIDR,
  type SimulatedNodesOptions,
} from './kwok.js';
export {
  applyWorkload,
  startChurn,
  workloadLayout,
  workloadStatus,
  deploymentObjects,
  namespaceObjects,
  collectionPath,
  WORKLOAD_LABEL,
  APP_PORT,
  SERVICE_PORT,
  type WorkloadSpec,
  type WorkloadLayout,
  type ApplyOptions,
  type Churn,
} from './workload.js';
export { listImages, parseImageList, type ImageTar } from './images.js';
export {
  API_SERVER,
  NODE_IP,
  NODE_NETNS,
  NODE_NAME,
  CLUSTER_CIDR,
  SERVICE_CIDR,
  K8S_VERSION,
  SA_ISSUER,
  CLUSTER_DNS_IP,
  PAUSE_IMAGE,
  COREDNS_IMAGE,
  IMAGES_BUILD_COMMAND,
  clusterName,
  stateDir,
  binDir,
} from './paths.js';
