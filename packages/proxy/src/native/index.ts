// The socket options of our N-API addon: the original-destination reader (SO_ORIGINAL_DST) and
// TCP_USER_TIMEOUT.
export {
  getOriginalDst,
  getTcpUserTimeout,
  requireAddon,
  addonPath,
  setTcpUserTimeout,
  ADDON_PATH_ENV,
  type OriginalDst,
} from './original-dst.js';
export { OriginalDstError, NotRedirectedError, AddonMissingError, type OriginalDstErrorCode } from './errors.js';
