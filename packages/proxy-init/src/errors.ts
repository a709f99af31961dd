// Error catalogue of proxy-init. Codes are stable; the exit code is chosen here for main.ts's edge:
// 2 for anything the operator must fix before a retry can work (bad input, missing binary, missing
// capability), 1 for a failure while talking to iptables.
export type ProxyInitErrorCode =
  | 'MINIMESH_PROXY_INIT_BAD_INPUT'
  | 'MINIMESH_PROXY_INIT_MISSING_BINARY'
  | 'MINIMESH_PROXY_INIT_NO_CAPABILITY'
  | 'MINIMESH_PROXY_INIT_COMMAND_FAILED';

const EXIT_CODES: Record<ProxyInitErrorCode, number> = {
  MINIMESH_PROXY_INIT_BAD_INPUT: 2,
  MINIMESH_PROXY_INIT_MISSING_BINARY: 2,
  MINIMESH_PROXY_INIT_NO_CAPABILITY: 2,
  MINIMESH_PROXY_INIT_COMMAND_FAILED: 1,
};

export class ProxyInitError extends Error {
  readonly exitCode: number;
  constructor(
    readonly code: ProxyInitErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProxyInitError';
    this.exitCode = EXIT_CODES[code];
  }
}
