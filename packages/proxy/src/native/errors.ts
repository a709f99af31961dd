// Errors of the original-destination reader. Stable codes; messages start with the context they add.
export type OriginalDstErrorCode =
  'MINIMESH_PROXY_NOT_REDIRECTED' | 'MINIMESH_PROXY_ORIGINAL_DST_FAILED' | 'MINIMESH_PROXY_ADDON_MISSING';

export class OriginalDstError extends Error {
  constructor(
    readonly code: OriginalDstErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'OriginalDstError';
  }
}

/** The connection reached us directly: iptables did not redirect it, so it has no original destination. */
export class NotRedirectedError extends OriginalDstError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('MINIMESH_PROXY_NOT_REDIRECTED', message, options);
    this.name = 'NotRedirectedError';
  }
}

/** The native addon is not built (or cannot be loaded on this platform). */
export class AddonMissingError extends OriginalDstError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('MINIMESH_PROXY_ADDON_MISSING', message, options);
    this.name = 'AddonMissingError';
  }
}
