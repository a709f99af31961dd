// A load-generating child process driven by JSON messages: the Go clients (bench/go-clients, one JSON
// line per message on stdin/stdout; the default, as Linkerd's figures were measured) or their Node
// counterpart (a script over the IPC channel: BENCH_CLIENT=node, or no Go on this machine).
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { goBenchBinary } from './go-build.js';
import { phase } from './report.js';

const GO_CLIENTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'go-clients');

export interface Driven {
  child: ChildProcess;
  kind: 'go' | 'node';
  send(m: object): void;
  /** The next message the child sent (its first is its hello). */
  next<T>(): Promise<T>;
}

export function startDriven(opts: {
  /** The subcommand of bench/go-clients that plays this part. */
  go: string;
  /** The Node script that plays it too. */
  script: string;
  /** What the child is, for messages: a message with an `error` field is reported under it (and still
   * queued when `queueErrors`). */
  label: string;
  queueErrors?: boolean;
  /** No Node counterpart: without Go, throw (the message says what to install). */
  requireGo?: boolean;
}): Driven {
  const queue: unknown[] = [];
  let wake: (() => void) | undefined;
  const receive = (m: unknown): void => {
    const error = (m as { error?: string }).error;
    if (error) console.error(`${opts.label}: ${error}`);
    if (!error || opts.queueErrors) queue.push(m);
    wake?.();
  };
  const goBin =
    process.env.BENCH_CLIENT === 'node' && !opts.requireGo ? undefined : goBenchBinary(GO_CLIENTS, 'bench-go-clients');
  if (!goBin && opts.requireGo)
    throw new Error(`the ${opts.label} is written in Go only (bench/go-clients ${opts.go}): install Go >= 1.24`);
  if (!goBin && process.env.BENCH_CLIENT !== 'node')
    phase(`no Go here: the ${opts.label} is ${basename(opts.script)} (grpc-js)`);
  let child: ChildProcess;
  let send: (m: object) => void;
  if (goBin) {
    child = spawn(goBin, [opts.go], { stdio: ['pipe', 'pipe', 'inherit'] });
    createInterface({ input: child.stdout! }).on('line', (line) => receive(JSON.parse(line)));
    // A child that exits makes the next write fail with EPIPE: said as what happened, not thrown unhandled.
    child.stdin!.on('error', (err) => gone(`its input closed (${err.message})`));
    send = (m) => {
      if (ended) throw ended;
      child.stdin!.write(`${JSON.stringify(m)}\n`);
    };
  } else {
    child = fork(opts.script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', receive);
    send = (m) => {
      if (ended) throw ended;
      child.send(m);
    };
  }
  let ended: Error | undefined;
  function gone(why: string): void {
    ended ??= new Error(`the ${opts.label} (${goBin ? `${goBin} ${opts.go}` : opts.script}) ended: ${why}`);
    wake?.();
  }
  child.on('exit', (code, signal) => gone(signal ? `killed by ${signal}` : `exit code ${code}`));
  child.on('error', (err) => gone(err.message));
  return {
    child,
    kind: goBin ? 'go' : 'node',
    send,
    async next<T>(): Promise<T> {
      while (queue.length === 0) {
        if (ended) throw ended;
        await new Promise<void>((r) => (wake = r));
      }
      return queue.shift() as T;
    },
  };
}
