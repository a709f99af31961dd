// The original-destination reader (SO_ORIGINAL_DST through our N-API addon).
export { getOriginalDst, requireAddon, addonPath, ADDON_PATH_ENV, type OriginalDst } from './original-dst.js';
export { OriginalDstError, NotRedirectedError, AddonMissingError, type OriginalDstErrorCode } from './errors.js';
