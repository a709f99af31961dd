// Error catalogue of @minimesh/config. Every message names the field, the bad value and what is expected.
export type ConfigErrorCode = 'MINIMESH_CONFIG_INVALID';

export class ConfigError extends Error {
  readonly code: ConfigErrorCode = 'MINIMESH_CONFIG_INVALID';
  /** Bad input: a program that meets it at start exits 2 (see defineProgram in @minimesh/runtime). */
  readonly exitCode = 2;
  constructor(
    /** The field, flag or variable that was wrong (e.g. "--proxy-uid", "proxy.ports.admin"). */
    readonly field: string,
    readonly value: unknown,
    /** What would have been accepted. */
    readonly expected: string,
    options?: { cause?: unknown },
  ) {
    super(`${field}: ${JSON.stringify(value)} is not valid: expected ${expected}`, options);
    this.name = 'ConfigError';
  }
}
