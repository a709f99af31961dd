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
export { runMain } from './run-main.js';
