// @minimesh/cli: the commands as functions, for tests and other tools.
export { createMeshCerts, type MeshCerts, type MeshCertsOptions } from './certs.js';
export { injectObject, injectCommand, toOverrides, loadInjectConfig } from './commands/inject.js';
export { uninjectObject, uninjectCommand } from './commands/uninject.js';
export { certsCommand } from './commands/certs.js';
export { versionCommand, serverVersions } from './commands/version.js';
export { TEMPLATE_PATHS, parseManifests, formatManifests } from './manifest.js';
export type { Command, CommandIO } from './io.js';
export { explainCommand } from './commands/explain.js';
export { checkCommand, runChecks, retryChecks, collectChecks, type CheckOptions } from './commands/check.js';
export { checkPreInstall, checkKubernetesVersion, INSTALL_ACCESS, type PreCheckInput } from './check/pre.js';
export { checkProxies, type ProxyCheckInput, type MeshedPodLike } from './check/proxy.js';
export { authzCommand } from './commands/authz.js';
export { walkPacket, matchRule, type Packet, type Walk, type WalkStep, type Verdict } from './explain/packet-walk.js';
export { toPodFacts, type PodFacts, type PodLike } from './explain/pod-facts.js';
export {
  describeExplanation,
  type Explanation,
  type Discovery,
  type DiscoveredEndpoint,
  type Outcome,
} from './explain/describe.js';
export { explainConnection, buildPacket, parseHostPort, type ExplainRequest } from './explain/explain.js';
export {
  fileNatSource,
  execNatSource,
  debugContainerNatSource,
  kubeDebugContainerApi,
  kubectlDebugHint,
  SAVE_BINARIES,
  type NatSource,
  type ExecInPod,
  type DebugContainerApi,
  type DebugContainerOptions,
} from './explain/nat-source.js';
export {
  checkCertificates,
  splitPemCertificates,
  DEFAULT_WARN_DAYS,
  type CertificateInputs,
} from './check/certificates.js';
export {
  checkApi,
  checkDeployments,
  checkWebhook,
  checkReadiness,
  checkNamespace,
  COMPONENTS,
  type DeploymentLike,
  type WebhookConfigLike,
  type ReadyProbe,
} from './check/control-plane.js';
export { formatResults, exitCodeOf, type CheckResult, type CheckStatus } from './check/types.js';
