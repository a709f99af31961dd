// Error catalogue of @minimesh/injector. Mapping to HTTP status and exit codes happens only in
// webhook/ (the fastify plugin) and main.ts.
export type InjectorErrorCode =
  | 'MINIMESH_INJECTOR_BAD_POD'
  | 'MINIMESH_INJECTOR_BAD_REVIEW'
  | 'MINIMESH_INJECTOR_PATCH_FAILED'
  | 'MINIMESH_INJECTOR_TLS'
  | 'MINIMESH_INJECTOR_CONFIG'
  | 'MINIMESH_INJECTOR_NAMESPACE_LOOKUP';

export class InjectorError extends Error {
  constructor(
    readonly code: InjectorErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'InjectorError';
  }
}
