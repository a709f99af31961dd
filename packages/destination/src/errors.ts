// Error catalogue of @minimesh/destination. Messages start with the context they add and pass { cause };
// only server/ maps these to gRPC status codes, only main.ts to exit codes.
export type DestinationErrorCode =
  | 'MINIMESH_DESTINATION_INVALID_AUTHORITY'
  | 'MINIMESH_DESTINATION_IP_QUERY'
  | 'MINIMESH_DESTINATION_EXTERNAL_NAME'
  | 'MINIMESH_DESTINATION_QUEUE_OVERFLOW'
  | 'MINIMESH_DESTINATION_LISTEN';

export class DestinationError extends Error {
  constructor(
    readonly code: DestinationErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DestinationError';
  }
}

/** An authority the Get/GetProfile API cannot serve; the message names the forms that are accepted. */
export function invalidAuthority(authority: string, why: string, clusterDomain: string): DestinationError {
  return new DestinationError(
    'MINIMESH_DESTINATION_INVALID_AUTHORITY',
    `authority "${authority}": ${why}; expected <service>.<namespace>.svc.${clusterDomain}[:<port>] or <hostname>.<service>.<namespace>.svc.${clusterDomain}[:<port>]`,
  );
}
