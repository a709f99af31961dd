// A load-generating child process driven by JSON messages: the Go clients (bench/go-clients, one JSON
// line per message on stdin/stdout) or their Node counterpart (a script, over the IPC channel).
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Driven {
  child: ChildProcess;
  kind: 'go' | 'node';
  send(m: object): void;
  /** The next message the child sent (its first is its hello). */
  next<T>(): Promise<T>;
}

export function startDriven(opts: {
  /** The Go binary and its arguments; undefined: run `script` with Node. */
  go?: { bin: string; args: string[] };
  script: string;
  /** What a message with an `error` field is reported as (it is still queued when `queueErrors`). */
  label: string;
  queueErrors?: boolean;
}): Driven {
  const queue: unknown[] = [];
  let wake: (() => void) | undefined;
  const receive = (m: unknown): void => {
    const error = (m as { error?: string }).error;
    if (error) console.error(`${opts.label}: ${error}`);
    if (!error || opts.queueErrors) queue.push(m);
    wake?.();
  };
  let child: ChildProcess;
  let send: (m: object) => void;
  if (opts.go) {
    child = spawn(opts.go.bin, opts.go.args, { stdio: ['pipe', 'pipe', 'inherit'] });
    createInterface({ input: child.stdout! }).on('line', (line) => receive(JSON.parse(line)));
    send = (m) => child.stdin!.write(`${JSON.stringify(m)}\n`);
  } else {
    child = fork(opts.script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', receive);
    send = (m) => child.send(m);
  }
  return {
    child,
    kind: opts.go ? 'go' : 'node',
    send,
    async next<T>(): Promise<T> {
      while (queue.length === 0) await new Promise<void>((r) => (wake = r));
      return queue.shift() as T;
    },
  };
}
