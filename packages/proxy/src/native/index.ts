// What our N-API addon does: the original-destination reader (SO_ORIGINAL_DST), TCP_USER_TIMEOUT, and
// the event loop's idle-time accounting turned off.
export { getOriginalDst, getTcpUserTimeout, requireAddon, setTcpUserTimeout } from './original-dst.js';
export { addonPath, ADDON_PATH_ENV, type OriginalDst } from './addon.js';
export { stopLoopIdleTime } from './event-loop.js';
export { OriginalDstError, NotRedirectedError, AddonMissingError, type OriginalDstErrorCode } from './errors.js';
