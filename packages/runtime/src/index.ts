// @minimesh/runtime: what every minimesh program shares.
export { createLogger, type Logger, type LoggerOptions } from './logger.js';
export {
  startAdminServer,
  createRegistry,
  type AdminServer,
  type AdminServerOptions,
  type AdminRoute,
} from './admin-server.js';
export { parseListenAddr, ListenAddrError } from './listen-addr.js';
export {
  parseFlags,
  renderHelp,
  UsageError,
  type FlagSpec,
  type FlagSpecs,
  type FlagValues,
  type ProgramInfo,
} from './flags.js';
export { outputFlag, parseOutputFormat, renderData, renderRecord, type OutputFormat } from './output.js';
export { runMain } from './run-main.js';
export {
  defineProgram,
  defineCommandLine,
  reportError,
  exitCodeOf,
  COMMON_FLAGS,
  type Program,
  type ProgramSpec,
  type ProgramContext,
  type ProgramFlags,
  type ProgramIO,
  type ConfigureInput,
  type Service,
  type CommandLineSpec,
  type CommandIO,
} from './program.js';
export { Backoff, backoffDelay, sleep, type BackoffOptions } from './backoff.js';
export { tuneHeap, type HeapLimits, type HeapTuning } from './heap.js';
export { isStaleKeepAlive } from './keep-alive.js';
export { pipeBoth } from './pipe.js';
