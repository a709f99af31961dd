// Error catalogue of minimesh-cni. Each code has the CNI error code the plugin returns for it (CNI
// spec 1.0, "Error": 1-99 are the spec's, 100+ the plugin's own); the message is what the kubelet
// shows in the pod's FailedCreatePodSandBox event, so it says what was wrong and what to do.
export type CniErrorCode =
  | 'MINIMESH_CNI_VERSION'
  | 'MINIMESH_CNI_BAD_ENV'
  | 'MINIMESH_CNI_BAD_CONFIG'
  | 'MINIMESH_CNI_DECODE'
  | 'MINIMESH_CNI_API'
  | 'MINIMESH_CNI_POD'
  | 'MINIMESH_CNI_RULES'
  | 'MINIMESH_CNI_CHECK'
  | 'MINIMESH_CNI_INSTALL';

/** The CNI error code of each of ours. */
export const CNI_ERROR_CODES: Record<CniErrorCode, number> = {
  MINIMESH_CNI_VERSION: 1, // incompatible CNI version
  MINIMESH_CNI_BAD_ENV: 4, // invalid necessary environment variables
  MINIMESH_CNI_DECODE: 6, // failed to decode content
  MINIMESH_CNI_BAD_CONFIG: 7, // invalid network config
  MINIMESH_CNI_API: 11, // try again later: the API server did not answer
  MINIMESH_CNI_POD: 100, // the pod's recorded proxy-init arguments are missing or invalid
  MINIMESH_CNI_RULES: 101, // writing or removing the rules failed
  MINIMESH_CNI_CHECK: 102, // CHECK: the rules are not as written
  MINIMESH_CNI_INSTALL: 110, // the installer could not put the plugin in place
};

export class CniError extends Error {
  readonly cniCode: number;
  /** Bad input for the installer's flags; the plugin always answers with a CNI error. */
  readonly exitCode: number;
  constructor(
    readonly code: CniErrorCode,
    message: string,
    options?: { cause?: unknown; details?: string },
  ) {
    super(message, options);
    this.name = 'CniError';
    this.cniCode = CNI_ERROR_CODES[code];
    this.exitCode = code === 'MINIMESH_CNI_INSTALL' ? 1 : 2;
    this.details = options?.details;
  }
  readonly details: string | undefined;
}
