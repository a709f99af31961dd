// @minimesh/proxy-init: the pure rule plan, the restore payloads, and the thin apply.
export { ProxyInitError, type ProxyInitErrorCode } from './errors.js';
export {
  planFirewall,
  ruleArgs,
  jumpRule,
  expectedSaveLines,
  REDIRECT_CHAIN,
  OUTPUT_CHAIN,
  COMMENT_PREFIX,
  type ProxyInitOptions,
  type FirewallPlan,
  type FamilyPlan,
  type ChainPlan,
  type Rule,
  type Family,
} from './plan.js';
export { toMultiportGroups, MULTIPORT_LIMIT } from './port-groups.js';
export { parseNatSave, type NatState } from './nat-state.js';
export {
  parseNatTable,
  parseRule,
  parseCidrText,
  parsePortRange,
  tokenize,
  NatParseError,
  BUILTIN_NAT_CHAINS,
  type NatTable,
  type NatChain,
  type NatRule,
  type NatTarget,
  type Negatable,
} from './nat-table.js';
export { renderApplyPayload, renderCleanupPayload } from './restore-payload.js';
export {
  parseMode,
  resolveBinaries,
  binaryNames,
  findInPath,
  MODES,
  type IptablesMode,
  type ResolvedBinaries,
  type Binaries,
} from './binaries.js';
export { applyFirewall, cleanupFirewall, type ApplyOptions, type FamilyReport } from './apply.js';
export { createCommandRunner, type CommandRunner, type CommandResult } from './command-runner.js';
export { hasCapability, CAP_NET_ADMIN } from './capabilities.js';
export { parseCommand, normalizeArgv, FLAGS, PROGRAM, type ProxyInitCommand } from './options.js';
export { proxyInitMain, proxyInitProgram, type ProgramDeps } from './program.js';
