// @minimesh/cni: the minimesh-cni plugin (CNI spec 1.0, chained) and its node installer.
export { CniError, CNI_ERROR_CODES, type CniErrorCode } from './errors.js';
export {
  parseCniEnv,
  parseNetConf,
  podOf,
  addResult,
  versionResult,
  errorResult,
  PLUGIN_TYPE,
  SUPPORTED_VERSIONS,
  DEFAULT_STATE_DIR,
  type CniEnv,
  type CniCommand,
  type NetConf,
} from './plugin/spec.js';
export { decideForPod, type PodDecision, type PodLike } from './plugin/pod-decision.js';
export { runPlugin, type PluginOutcome } from './plugin/plugin.js';
export { defaultDeps, readPodFromApi, type PluginDeps } from './plugin/deps.js';
export { writeRecord, readRecord, removeRecord, listRecords, type SandboxRecord } from './plugin/sandbox-record.js';
export {
  pickConfFile,
  insertPlugin,
  removePlugin,
  isChained,
  ConflistError,
  CONF_EXTENSIONS,
  type PluginEntry,
} from './installer/conflist.js';
export { renderPluginKubeconfig } from './installer/kubeconfig.js';
export {
  createInstaller,
  KUBECONFIG_NAME,
  type Installer,
  type InstallerOptions,
  type InstallerStatus,
} from './installer/installer.js';
export { installerProgram, INSTALLER_FLAGS, type InstallerConfig } from './installer/program.js';
