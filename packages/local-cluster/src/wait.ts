// Waiting for a component of the local cluster, and the one-line error `up` prints when one fails:
// which component, what it did not do, and which log file says why.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StatePaths } from './paths.js';
import { isRunning } from './procs.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An error whose message is the one line `up` prints: what failed and which log file says why. */
export class ComponentError extends Error {
  readonly code = 'MINIMESH_LOCAL_CLUSTER_COMPONENT';
  constructor(
    readonly component: string,
    readonly logFile: string,
    what: string,
  ) {
    super(`local cluster: ${component} ${what} (log: ${logFile})`);
  }
}

/** The last line of a log file that looks like an error, for the one-line message. */
export function lastErrorLine(file: string): string | undefined {
  let lines: string[] = [];
  try {
    lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return undefined;
  }
  const tail = lines.slice(-60);
  const err = [...tail].reverse().find((l) => /\b(E\d{4}|error|fatal|failed|level=fatal|panic)\b/i.test(l));
  const line = (err ?? tail[tail.length - 1] ?? '').trim();
  return line.length > 240 ? `${line.slice(0, 237)}...` : line || undefined;
}

export async function waitFor(
  timeoutMs: number,
  check: () => Promise<boolean> | boolean,
  fail: (reason: 'timeout' | Error) => Error,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      // A check throws a ComponentError when its process died: no point in waiting longer.
      if (err instanceof ComponentError) throw err;
    }
    if (Date.now() > deadline) throw fail('timeout');
    await sleep(100);
  }
}

/** Throws the one-line error when a component's process is gone. */
export function assertRunning(p: StatePaths, name: string): void {
  if (isRunning(p, name)) return;
  const log = join(p.logs, `${name}.log`);
  const why = lastErrorLine(log);
  throw new ComponentError(name, log, `exited${why ? `: ${why}` : ''}`);
}
