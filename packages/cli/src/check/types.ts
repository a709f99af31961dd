// One line of `minimesh check`: ✔ ok, ‼ warn, ✖ fail (and "skipped" when a check could not run
// because an earlier one failed).
export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  category: string;
  description: string;
  status: CheckStatus;
  /** Why it warned or failed, or what was found. */
  detail?: string;
  /** What to do about it. */
  hint?: string;
  /** A failure that may pass by itself (a rollout, a proxy starting): `check --wait` runs it again. */
  retry?: boolean;
}

export const SYMBOLS: Record<CheckStatus, string> = { ok: '✔', warn: '‼', fail: '✖', skip: '-' };

export function ok(category: string, description: string, detail?: string): CheckResult {
  return { category, description, status: 'ok', ...(detail !== undefined ? { detail } : {}) };
}

export function warn(category: string, description: string, detail: string, hint?: string): CheckResult {
  return { category, description, status: 'warn', detail, ...(hint !== undefined ? { hint } : {}) };
}

export function fail(category: string, description: string, detail: string, hint?: string): CheckResult {
  return { category, description, status: 'fail', detail, ...(hint !== undefined ? { hint } : {}) };
}

export function skip(category: string, description: string, detail: string): CheckResult {
  return { category, description, status: 'skip', detail };
}

/**
 * Color as CLIs do it: on a terminal, unless NO_COLOR is set (any value, https://no-color.org);
 * FORCE_COLOR=1 forces it (tests, pagers).
 */
export function useColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true;
}

const COLORS: Record<CheckStatus, string> = { ok: '\x1b[32m', warn: '\x1b[33m', fail: '\x1b[31m', skip: '\x1b[2m' };

/** linkerd check's layout: a header per category, one line per check, details indented below. */
export function formatResults(results: readonly CheckResult[], opts: { color?: boolean; wide?: boolean } = {}): string {
  const sym = (s: CheckStatus): string => (opts.color ? `${COLORS[s]}${SYMBOLS[s]}\x1b[0m` : SYMBOLS[s]);
  const out: string[] = [];
  let current: string | undefined;
  for (const r of results) {
    if (r.category !== current) {
      if (current !== undefined) out.push('');
      out.push(r.category, '-'.repeat(r.category.length));
      current = r.category;
    }
    out.push(`${sym(r.status)} ${r.description}`);
    // -o wide: what each passing check found, too.
    if ((r.status !== 'ok' || opts.wide) && r.detail) out.push(`    ${r.detail}`);
    if (r.hint) out.push(`    see: ${r.hint}`);
  }
  const failed = results.filter((r) => r.status === 'fail').length;
  const warned = results.filter((r) => r.status === 'warn').length;
  out.push(
    '',
    failed > 0
      ? `Status check results are ${sym('fail')} (${failed} failed, ${warned} warning${warned === 1 ? '' : 's'})`
      : `Status check results are ${sym('ok')}${warned > 0 ? ` (${warned} warning${warned === 1 ? '' : 's'})` : ''}`,
  );
  return `${out.join('\n')}\n`;
}

export function exitCodeOf(results: readonly CheckResult[]): number {
  return results.some((r) => r.status === 'fail') ? 1 : 0;
}
