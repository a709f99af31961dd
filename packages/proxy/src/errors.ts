// The proxy's error catalogue. Each error adds one piece of context and wraps its cause;
// error-response.ts is the only place that turns them into bytes on the wire.
export type ProxyErrorCode =
  | 'MINIMESH_PROXY_NO_ENDPOINTS'
  | 'MINIMESH_PROXY_CONNECT_REFUSED'
  | 'MINIMESH_PROXY_CONNECT_TIMEOUT'
  | 'MINIMESH_PROXY_PEER_IDENTITY_MISMATCH'
  | 'MINIMESH_PROXY_TLS_FAILED'
  | 'MINIMESH_PROXY_UPSTREAM_FAILED'
  | 'MINIMESH_PROXY_RESPONSE_TIMEOUT'
  | 'MINIMESH_PROXY_LOOP'
  | 'MINIMESH_PROXY_NO_ORIGINAL_DST'
  | 'MINIMESH_PROXY_NOT_READY'
  | 'MINIMESH_PROXY_IDENTITY_FAILED'
  // Authorization and routes (src/policy/): a request the port's policy does not admit, one no route
  // matches, a policy the proxy cannot use, a route's request timeout.
  | 'MINIMESH_PROXY_UNAUTHORIZED'
  | 'MINIMESH_PROXY_ROUTE_NOT_FOUND'
  | 'MINIMESH_PROXY_INVALID_POLICY'
  | 'MINIMESH_PROXY_REQUEST_TIMEOUT'
  // A request over the Server's HTTPLocalRateLimitPolicy (429, with Retry-After).
  | 'MINIMESH_PROXY_RATE_LIMITED'
  // A connection the outbound policy's opaque route forbids (a Deny EgressNetwork): refused.
  | 'MINIMESH_PROXY_FORBIDDEN'
  // A request the proxy refuses to forward because it is malformed in a way the HTTP parser let
  // through (an HTTP/2 host header that disagrees with :authority).
  | 'MINIMESH_PROXY_MALFORMED_REQUEST';

export class ProxyError extends Error {
  /** When the caller may try again (a rate limit's Retry-After), in whole seconds. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly code: ProxyErrorCode,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(message, options);
    this.name = 'ProxyError';
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }
}

/**
 * A route's own answer given as an error (a failure-injecting backend reached by a retry's attempt,
 * which can only be refused): answered with its HTTP status, or its gRPC status to a gRPC caller.
 */
export class RouteAnswer extends ProxyError {
  constructor(
    readonly status: number,
    readonly grpcStatus: number,
    message: string,
  ) {
    super('MINIMESH_PROXY_INVALID_POLICY', message);
    this.name = 'RouteAnswer';
  }
}

/** Classifies a socket/TLS error from connecting to `target` into the catalogue. */
export function toConnectError(target: string, err: unknown, expectedIdentity?: string): ProxyError {
  if (err instanceof ProxyError) return err;
  const e = err as NodeJS.ErrnoException & { reason?: string };
  const code = e?.code ?? '';
  if (code === 'ECONNREFUSED')
    return new ProxyError('MINIMESH_PROXY_CONNECT_REFUSED', `endpoint ${target}: connection refused`, { cause: err });
  if (code === 'ETIMEDOUT' || code === 'MINIMESH_CONNECT_TIMEOUT') {
    return new ProxyError('MINIMESH_PROXY_CONNECT_TIMEOUT', `endpoint ${target}: ${e.message}`, { cause: err });
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code === 'MINIMESH_IDENTITY_MISMATCH') {
    return new ProxyError(
      'MINIMESH_PROXY_PEER_IDENTITY_MISMATCH',
      `endpoint ${target}: peer certificate does not name ${expectedIdentity ?? 'the expected identity'}: ${e.message}`,
      { cause: err },
    );
  }
  if (
    code.startsWith('ERR_SSL') ||
    code.startsWith('ERR_TLS') ||
    /certificate|ssl|tls/i.test(e?.message ?? '') ||
    code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' ||
    code === 'SELF_SIGNED_CERT_IN_CHAIN' ||
    code === 'DEPTH_ZERO_SELF_SIGNED_CERT' ||
    code === 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY' ||
    code === 'CERT_HAS_EXPIRED'
  ) {
    return new ProxyError('MINIMESH_PROXY_TLS_FAILED', `endpoint ${target}: TLS failed: ${e.message}`, { cause: err });
  }
  return new ProxyError('MINIMESH_PROXY_UPSTREAM_FAILED', `endpoint ${target}: ${e?.message ?? String(err)}`, {
    cause: err,
  });
}

/** The error a wrapper was made from (its `cause`), or the error itself: the socket-level reason to classify. */
export function unwrapCause(err: Error): Error {
  const c = (err as { cause?: unknown }).cause;
  return c instanceof Error ? c : err;
}
