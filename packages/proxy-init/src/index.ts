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
export { RULE_FLAGS, RULE_FLAG_NAMES, parseRuleArgs, toRuleCommand, type RuleCommand } from './options.js';
export { writeRules, binariesFor, type WriteRulesOptions, type WriteRulesResult } from './write-rules.js';
export { diffNatRules, verifyRules, type VerifyRulesOptions } from './verify.js';
export {
  validateRedirect,
  parseHostPort,
  formatHostPort,
  type HostPort,
  type ValidateOptions,
  type ValidateResult,
} from './validator/validate-redirect.js';
export {
  validatorProgram,
  validatorMain,
  notRedirectedMessage,
  ValidatorError,
  VALIDATOR_PROGRAM,
  VALIDATOR_FLAGS,
  DEFAULT_CONNECT_ADDR,
  type ValidatorConfig,
} from './validator/program.js';
