// Shared bits of the local cluster's integration tests.
import { randomBytes } from 'node:crypto';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value (bounded by `timeoutMs`); returns that value. */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not true after ${timeoutMs / 1000}s${lastErr ? ` (last error: ${String(lastErr)})` : ''}`,
      );
    await sleep(200);
  }
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/** An e2e fixture's image (scripts/images.sh builds it; e2e/fixtures/<name>.mjs). */
export const fixture = (name: string): string => `minimesh.test/${name}:e2e`;

/** A container that runs a Node.js script in a fixture image (the images have node, not always a shell). */
export function nodeScript(name: string, script: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, image: fixture('http-echo'), command: ['node', '-e', script], ...extra };
}
