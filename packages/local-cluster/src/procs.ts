// Long-lived processes of the local cluster: started detached (own session, output to a log file),
// remembered by pid file, so they outlive the test runner or CLI that started them.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemCgroupProcs } from './cgroups.js';
import type { StatePaths } from './paths.js';

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie or a reused pid does not count.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

export function readPid(paths: StatePaths, name: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(paths.pids, `${name}.pid`), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export function isRunning(paths: StatePaths, name: string): boolean {
  const pid = readPid(paths, name);
  return pid !== undefined && pidAlive(pid);
}

export interface StartOptions {
  /** A network namespace name (/var/run/netns/<netns>). */
  netns?: string;
  /** A process whose mount namespace to enter (the node's private mount namespace). */
  mountNsPid?: number;
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts `cmd args` detached (its own session) and logs to logs/<name>.log. Namespaces are entered
 * with nsenter (network, and mount when asked), never `ip netns exec`: that one remounts /sys, which
 * hides /sys/fs/cgroup from kubelet and containerd.
 */
export function startDetached(
  paths: StatePaths,
  name: string,
  cmd: string,
  args: string[],
  opts: StartOptions = {},
): number {
  mkdirSync(paths.pids, { recursive: true });
  mkdirSync(paths.logs, { recursive: true });
  const log = openSync(join(paths.logs, `${name}.log`), 'a');
  const ns = [
    ...(opts.mountNsPid !== undefined ? [`--mount=/proc/${opts.mountNsPid}/ns/mnt`] : []),
    ...(opts.netns ? [`--net=/var/run/netns/${opts.netns}`] : []),
  ];
  const [file, argv] = ns.length > 0 ? ['nsenter', [...ns, '--', cmd, ...args]] : [cmd, args];
  // The node's programs run in a cgroup of their own (cgroups.ts): the shell joins it, then becomes the
  // program, so it and everything it starts are in it from the first instruction.
  const procs = systemCgroupProcs();
  const [f, a] = procs ? ['sh', ['-c', 'echo $$ > "$0" && exec "$@"', procs, file, ...argv]] : [file, argv];
  const child = spawn(f, a, { detached: true, stdio: ['ignore', log, log], env: opts.env ?? process.env });
  closeSync(log);
  if (child.pid === undefined) throw new Error(`start ${name}: spawn ${file} failed`);
  child.unref();
  writeFileSync(join(paths.pids, `${name}.pid`), `${child.pid}\n`);
  return child.pid;
}

export async function killGroup(pid: number, graceMs = 3000): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        /* gone */
      }
    }
  };
  if (!pidAlive(pid)) return;
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && pidAlive(pid)) await new Promise((r) => setTimeout(r, 50));
  if (pidAlive(pid)) signal('SIGKILL');
  const hard = Date.now() + 2000;
  while (Date.now() < hard && pidAlive(pid)) await new Promise((r) => setTimeout(r, 50));
}

export async function stopProcess(paths: StatePaths, name: string, graceMs = 3000): Promise<void> {
  const pid = readPid(paths, name);
  if (pid !== undefined) await killGroup(pid, graceMs);
  rmSync(join(paths.pids, `${name}.pid`), { force: true });
}

export function pidFileNames(paths: StatePaths): string[] {
  if (!existsSync(paths.pids)) return [];
  return readdirSync(paths.pids)
    .filter((f) => f.endsWith('.pid'))
    .map((f) => f.slice(0, -4));
}

/** Network namespaces whose name starts with `prefix`. */
export function listNetns(prefix: string): string[] {
  let out = '';
  try {
    out = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  } catch {
    return [];
  }
  return out
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(prefix));
}

export function netnsPids(netns: string): number[] {
  try {
    return execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    return [];
  }
}

/** Kills every process inside a network namespace (SIGTERM, then SIGKILL), then deletes it. */
export async function destroyNetns(netns: string, graceMs = 2000): Promise<void> {
  for (const pid of netnsPids(netns)) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* gone */
    }
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && netnsPids(netns).some(pidAlive)) await new Promise((r) => setTimeout(r, 50));
  for (const pid of netnsPids(netns)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  const hard = Date.now() + 2000;
  while (Date.now() < hard && netnsPids(netns).some(pidAlive)) await new Promise((r) => setTimeout(r, 50));
  try {
    execFileSync('ip', ['netns', 'del', netns], { stdio: 'ignore' });
  } catch {
    /* already gone */
  }
}

export function run(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
