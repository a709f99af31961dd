// System calls and context switches of a process over one phase, counted by the kernel's tracepoints
// through `perf stat` (Linux perf, Debian's linux-perf): raw_syscalls:sys_enter counts every system call
// of every thread the process has when counting starts, without slowing each call as strace would. Used
// by the proxy bench (--syscalls) to tell per-request work done in the kernel from work done in user
// space, for both proxies in the same run (docs/proxy.md, "Kernel or user space").
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

export interface Counts {
  syscalls: number;
  switches: number;
}

const EVENTS = ['raw_syscalls:sys_enter', 'context-switches'];
const EVENT_LIST = EVENTS.join(',');

/** Why counting cannot run on this machine, or undefined when it can (perf present, tracepoints readable). */
export function syscallCountingUnavailable(): string | undefined {
  const r = spawnSync('perf', ['stat', '-x,', '-e', EVENT_LIST, 'true'], { encoding: 'utf8' });
  if (r.error)
    return `perf is not installed (${(r.error as NodeJS.ErrnoException).code}; Debian: apt-get install linux-perf)`;
  const counts = parse(r.stderr);
  if (!counts) return `perf cannot count ${EVENTS.join(' and ')} here: ${r.stderr.trim().split('\n').pop()}`;
  return undefined;
}

/** Starts counting for `pid`; the returned function stops and gives the counts (rejects with perf's words). */
export function countFrom(pid: number): () => Promise<Counts> {
  const child: ChildProcess = spawn('perf', ['stat', '-x,', '-e', EVENT_LIST, '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return async () => {
    child.kill('SIGINT');
    await exited;
    const counts = parse(err);
    if (!counts) throw new Error(`perf stat -p ${pid} counted nothing: ${err.trim().slice(-500)}`);
    return counts;
  };
}

/** perf stat -x, lines: "<count>,<unit>,<event>,..."; undefined unless both events were counted. */
function parse(stderr: string): Counts | undefined {
  const by = new Map<string, number>();
  for (const line of stderr.split('\n')) {
    const [count, , event] = line.split(',');
    if (event && /^\d+$/.test(count ?? '')) by.set(event, Number(count));
  }
  const syscalls = by.get(EVENTS[0]!);
  const switches = by.get(EVENTS[1]!);
  return syscalls === undefined || switches === undefined ? undefined : { syscalls, switches };
}
