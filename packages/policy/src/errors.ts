// Error catalogue of @minimesh/policy. Messages start with the context they add and pass { cause };
// only server/ maps these to gRPC status codes, only main.ts to exit codes.
export type PolicyErrorCode =
  | 'MINIMESH_POLICY_INVALID_RESOURCE'
  | 'MINIMESH_POLICY_INVALID_WORKLOAD'
  | 'MINIMESH_POLICY_INVALID_PORT'
  | 'MINIMESH_POLICY_INVALID_TARGET'
  | 'MINIMESH_POLICY_NOT_FOUND'
  | 'MINIMESH_POLICY_LISTEN';

export class PolicyError extends Error {
  constructor(
    readonly code: PolicyErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PolicyError';
  }
}

/** A resource the index cannot use; the message names the field, what it held and what was expected. */
export function invalidResource(what: string, message: string): PolicyError {
  return new PolicyError('MINIMESH_POLICY_INVALID_RESOURCE', `${what}: ${message}`);
}
