// Error catalogue of @minimesh/injector. Mapping to HTTP status and exit codes happens only in
// webhook/ (the fastify plugin) and main.ts.
//   BAD_POD           the pod cannot be patched (e.g. spec.containers is not a list) → admitted unmeshed + warning
//   BAD_REVIEW        the body is not a usable AdmissionReview → HTTP 400
//   TLS               the certificate/key pair does not load → exit 2 at start, kept old pair on reload
//   CONFIG            --config cannot be read or is invalid → exit 2
//   NAMESPACE_LOOKUP  a namespace missing from the cache could not be fetched → admitted unmeshed + warning
// The webhook's HTTP error bodies also use MINIMESH_INJECTOR_BODY_TOO_LARGE (413) and
// MINIMESH_INJECTOR_INTERNAL (an unexpected fastify error).
export type InjectorErrorCode =
  | 'MINIMESH_INJECTOR_BAD_POD'
  | 'MINIMESH_INJECTOR_BAD_REVIEW'
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
