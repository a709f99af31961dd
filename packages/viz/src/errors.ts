// viz's errors: one line each, naming what was wrong and what to do. The CLI prints the message and
// exits with exitCode; the dashboard shows the same message.
export type VizErrorCode =
  | 'MINIMESH_VIZ_NOT_FOUND'
  | 'MINIMESH_VIZ_BAD_INPUT'
  | 'MINIMESH_VIZ_NOT_INSTALLED'
  | 'MINIMESH_VIZ_NOT_MESHED'
  | 'MINIMESH_VIZ_UNREACHABLE'
  | 'MINIMESH_VIZ_TAP_REFUSED'
  | 'MINIMESH_VIZ_KUBE';

export class VizError extends Error {
  /** 2: the user named something that is not there or gave bad input; 1: something failed. */
  readonly exitCode: number;
  constructor(
    readonly code: VizErrorCode,
    message: string,
    opts: { cause?: unknown; exitCode?: number } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.exitCode =
      opts.exitCode ??
      (code === 'MINIMESH_VIZ_NOT_FOUND' || code === 'MINIMESH_VIZ_NOT_MESHED' || code === 'MINIMESH_VIZ_BAD_INPUT'
        ? 2
        : 1);
  }
}
