// Error catalogue of @minimesh/identity. Each error adds one piece of context and keeps its cause;
// the gRPC server (src/server/) and main.ts are the only places that turn codes into statuses or exit codes.
export type IdentityErrorCode =
  /** No valid issuer is loaded (or the loaded one has expired). */
  | 'MINIMESH_IDENTITY_ISSUER_UNAVAILABLE'
  /** The issuer files are missing, unreadable, or do not form a valid issuing CA. */
  | 'MINIMESH_IDENTITY_ISSUER_INVALID'
  /** The trust-anchor bundle is missing or holds no usable certificate. */
  | 'MINIMESH_IDENTITY_TRUST_ANCHORS_INVALID'
  /** The kubeconfig cannot be loaded, or there is none and we are not in a cluster. */
  | 'MINIMESH_IDENTITY_KUBECONFIG_INVALID'
  /** The request lacks identity, token or CSR. */
  | 'MINIMESH_IDENTITY_REQUEST_INCOMPLETE'
  /** The CSR does not parse or asks for something other than exactly the requested identity. */
  | 'MINIMESH_IDENTITY_CSR_INVALID'
  /** The TokenReview said the token is not authenticated (for our audience). */
  | 'MINIMESH_IDENTITY_TOKEN_UNAUTHENTICATED'
  /** The token is valid but belongs to a different identity than the one requested. */
  | 'MINIMESH_IDENTITY_IDENTITY_MISMATCH'
  /** The TokenReview could not be made (API server unreachable, forbidden, bad answer). */
  | 'MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED'
  /** Signing the leaf failed. */
  | 'MINIMESH_IDENTITY_SIGN_FAILED'
  /** The worker thread doing the call's CSR check or signing ended before it answered (--certify-workers). */
  | 'MINIMESH_IDENTITY_WORKER_FAILED';

export class IdentityError extends Error {
  override name = 'IdentityError';
  constructor(
    readonly code: IdentityErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isIdentityError(err: unknown, code?: IdentityErrorCode): err is IdentityError {
  return err instanceof IdentityError && (code === undefined || err.code === code);
}
