// Waiting for a child process to say something: the benches' processes (apps, load generators, readiness
// waiters, the floor pair) each print one line once they are up or done. Shared by bench.ts, floor.ts and
// the floor pair's test.
import type { ChildProcess } from 'node:child_process';

/**
 * The first line the child prints on stdout, from now on, that starts with `prefix`. Rejects when it
 * exits without one or after `timeoutMs`, with the end of what it printed (stdout, and stderr when piped).
 */
export function waitLine(child: ChildProcess, prefix: string, timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let printed = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      printed += d.toString();
      const line = buf.split('\n').find((l) => l.startsWith(prefix));
      if (line !== undefined) settle(() => resolve(line));
    };
    const onErr = (d: Buffer) => (printed += d.toString());
    // A line written just before the exit may still be in the pipe when 'exit' comes.
    const onExit = (code: number | null) =>
      setTimeout(
        () => settle(() => reject(new Error(`process exited (${code}) before "${prefix}": ${printed.slice(-500)}`))),
        50,
      );
    const timer = setTimeout(
      () =>
        settle(() =>
          reject(new Error(`timed out after ${timeoutMs} ms waiting for "${prefix}": ${printed.slice(-500)}`)),
        ),
      timeoutMs,
    );
    let settled = false;
    function settle(then: () => void) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr?.off('data', onErr);
      child.off('exit', onExit);
      then();
    }
    child.stdout!.on('data', onData);
    child.stderr?.on('data', onErr);
    child.once('exit', onExit);
  });
}
