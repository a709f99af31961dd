// Error catalogue of @minimesh/destination. Messages start with the context they add and pass { cause };
// only server/ maps these to gRPC status codes, only main.ts to exit codes.
export type DestinationErrorCode =
  | 'MINIMESH_DESTINATION_INVALID_AUTHORITY'
  | 'MINIMESH_DESTINATION_IP_QUERY'
  | 'MINIMESH_DESTINATION_EXTERNAL_NAME'
  | 'MINIMESH_DESTINATION_QUEUE_OVERFLOW'
  | 'MINIMESH_DESTINATION_TOO_MANY_STREAMS'
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
    `authority "${shorten(authority)}": ${why}; expected <service>.<namespace>.svc.${clusterDomain}[:<port>] or <hostname>.<service>.<namespace>.svc.${clusterDomain}[:<port>]`,
  );
}

/** Untrusted text quoted in a message: at most 100 characters, the rest counted. */
export function shorten(text: string, max = 100): string {
  return text.length <= max ? text : `${text.slice(0, max)}...(${text.length} characters)`;
}
