// Error catalogue of @minimesh/kube.
//   CONFIG   no usable kubeconfig or in-cluster configuration (exit 2 when it reaches a program's main)
//   REQUEST  an API request that failed: a transport error (status 0) or an HTTP status outside 2xx
//   AUTH     the credential plugin (users[].user.exec) failed or returned nothing usable
export type KubeErrorCode = 'MINIMESH_KUBE_CONFIG' | 'MINIMESH_KUBE_REQUEST' | 'MINIMESH_KUBE_AUTH';

export class KubeError extends Error {
  constructor(
    readonly code: KubeErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'KubeError';
  }
}

/** The kubeconfig is missing or wrong: the user's input, so a program exits 2 with this one line. */
export class KubeConfigError extends KubeError {
  readonly exitCode = 2;
  constructor(message: string, options?: { cause?: unknown }) {
    super('MINIMESH_KUBE_CONFIG', message, options);
  }
}

/** A request that did not succeed; statusCode is the HTTP status (0 when no response arrived). */
export class KubeApiError extends KubeError {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly statusCode: number,
    /** The API's own words (Status.message), or the transport error's message. Never a request body. */
    readonly detail: string,
    options?: { cause?: unknown; reason?: string },
  ) {
    super(
      'MINIMESH_KUBE_REQUEST',
      `${method} ${path}: ${statusCode === 0 ? 'request failed' : `HTTP ${statusCode}${options?.reason ? ` ${options.reason}` : ''}`}${detail ? `: ${detail}` : ''}`,
      options,
    );
    this.reason = options?.reason;
  }
  /** Status.reason, e.g. "Forbidden", "Expired", when the API server sent one. */
  readonly reason: string | undefined;
}

/** Status.message of a Kubernetes Status body, or a short prefix of a text body. */
export function statusMessage(body: unknown): string {
  if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string')
    return (body as { message: string }).message;
  return typeof body === 'string' ? (body.split('\n')[0] ?? '').slice(0, 200) : '';
}

/** Status.reason of a Kubernetes Status body. */
export function statusReason(body: unknown): string | undefined {
  const r = body && typeof body === 'object' ? (body as { reason?: unknown }).reason : undefined;
  return typeof r === 'string' && r !== '' ? r : undefined;
}
