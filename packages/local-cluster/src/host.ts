// What the node changes on the host, and how it is undone: the node's private mount namespace, the
// cgroup root in every cgroup v1 hierarchy, the host-wide sysctls kubelet sets, and the processes
// that outlive their parents (containerd shims, containers).
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { cgroupHierarchies, systemCgroupDir, weighPodTree } from './cgroups.js';
import { CGROUP_ROOT, clusterName, type StatePaths } from './paths.js';
import { pidAlive } from './procs.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Host paths kubelet and containerd use whatever their configuration says (the device-plugin socket,
 * /var/log/containers links, the CNI cache, containerd 1.6's shim sockets). In the node's private
 * mount namespace each is a fresh tmpfs, so nothing is written to the host's copy and everything
 * vanishes with the namespace.
 */
export const PRIVATE_TMPFS = ['/var/lib/kubelet', '/var/log/containers', '/var/lib/cni', '/run/containerd'];

/** The holder's script: mount the tmpfs copies, then sleep forever (it keeps the namespace alive). */
export function mountNamespaceScript(): string {
  return [...PRIVATE_TMPFS.map((d) => `mount -t tmpfs -o mode=0755 ${TMPFS_SOURCE} ${d}`), 'exec sleep infinity'].join(
    ' && ',
  );
}

/** The tmpfs mounts' source name: how a leftover holder of this instance is recognised. */
export const TMPFS_SOURCE = `minimesh-${clusterName()}-node`;

/** Holders of this instance's mount namespace (normally one; more after a crash). */
export function mountNamespaceHolders(): number[] {
  return pidsWithArg('sleep').filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/mountinfo`, 'utf8').includes(` ${TMPFS_SOURCE} `);
    } catch {
      return false;
    }
  });
}

/** Makes missing mount points (recorded, so `down` removes them again when empty). */
export function ensureMountpoints(p: StatePaths): void {
  for (const d of PRIVATE_TMPFS) {
    if (existsSync(d)) continue;
    // Record every level we create, deepest last.
    const parts = d.split('/').filter(Boolean);
    for (let i = 1; i <= parts.length; i++) {
      const dir = `/${parts.slice(0, i).join('/')}`;
      if (!existsSync(dir)) {
        mkdirSync(dir);
        appendFileSync(p.createdMountpoints, `${dir}\n`);
      }
    }
  }
}

/** Removes the recorded mount points that are empty, deepest first. */
export function removeCreatedMountpoints(p: StatePaths): void {
  if (!existsSync(p.createdMountpoints)) return;
  const dirs = [...new Set(readFileSync(p.createdMountpoints, 'utf8').split('\n').filter(Boolean))].sort(
    (a, b) => b.length - a.length,
  );
  for (const d of dirs) {
    try {
      if (existsSync(d) && readdirSync(d).length === 0) rmdirSync(d);
    } catch {
      /* not empty or gone */
    }
  }
}

/** kubelet refuses a cgroupRoot that does not exist in every hierarchy: make it. */
export function ensureCgroupRoot(): void {
  for (const h of cgroupHierarchies()) {
    const dir = join(h, CGROUP_ROOT);
    if (!existsSync(dir)) mkdirSync(dir);
  }
  // cpuset: a child starts with empty cpus/mems and cannot hold tasks until they are copied down.
  const cpuset = cgroupHierarchies().find((h) => existsSync(join(h, 'cpuset.cpus')));
  if (cpuset) {
    for (const f of ['cpuset.cpus', 'cpuset.mems']) {
      const file = join(cpuset, CGROUP_ROOT, f);
      if (readFileSync(file, 'utf8').trim() === '') writeFileSync(file, readFileSync(join(cpuset, f), 'utf8'));
    }
  }
  weighPodTree();
}

/** Every directory of the cgroup tree under the cgroup root, in every hierarchy, deepest first. */
export function cgroupDirs(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries: string[] = [];
    try {
      entries = readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const e of entries) walk(join(dir, e));
    out.push(dir);
  };
  for (const h of cgroupHierarchies()) {
    const root = join(h, CGROUP_ROOT);
    if (existsSync(root)) walk(root);
  }
  return out;
}

/** Processes in the node's cgroup tree (every container and pod sandbox), or in the cgroups `dirs`. */
export function cgroupPids(dirs: readonly string[] = cgroupDirs()): number[] {
  const pids = new Set<number>();
  for (const dir of dirs) {
    try {
      for (const s of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) {
        const pid = Number(s);
        if (Number.isInteger(pid) && pid > 0) pids.add(pid);
      }
    } catch {
      /* gone */
    }
  }
  return [...pids];
}

/** SIGKILLs every process in the node's cgroups, then removes the cgroup directories bottom-up. */
export function removeCgroupTree(timeoutMs = 5000): Promise<string[]> {
  return removeCgroups(cgroupDirs, timeoutMs);
}

/**
 * Removes the node programs' cgroup (src/cgroups.ts) once they are stopped, after SIGKILLing what is
 * left in it (a shim that outlived containerd). Returns it when it stays busy.
 */
export async function removeSystemCgroup(timeoutMs = 5000): Promise<string | undefined> {
  const dir = systemCgroupDir();
  return dir ? (await removeCgroups(() => [dir], timeoutMs))[0] : undefined;
}

/** SIGKILLs every process in the cgroups `dirs()` lists (deepest first), then removes them; returns those left. */
async function removeCgroups(dirs: () => string[], timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = cgroupPids(dirs()).filter(pidAlive);
    if (pids.length === 0 || Date.now() > deadline) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await sleep(50);
  }
  const left: string[] = [];
  for (const dir of dirs()) {
    let removed = false;
    for (let i = 0; i < 20 && !removed; i++) {
      try {
        rmdirSync(dir);
        removed = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') removed = true;
        else await sleep(50); // EBUSY: a zombie still being reaped
      }
    }
    if (!removed) left.push(dir);
  }
  return left;
}

/** The host-wide sysctls kubelet sets at start (setupKernelTunables), so `down` can put them back. */
export const KUBELET_SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
];

/**
 * Where the original values are kept: one file for the machine, not per instance, because the values
 * are the machine's. The first kubelet of any instance saves them; a second instance finds the file
 * and keeps it (the values it sees are the first kubelet's); the last `down` restores them.
 */
export const SAVED_SYSCTLS = process.env.MINIMESH_SYSCTLS_FILE ?? '/tmp/minimesh-kubelet-sysctls.json';

/** Saves the values unless a file is there already (a running or crashed kubelet changed them since). */
export function saveSysctls(): void {
  if (existsSync(SAVED_SYSCTLS)) return;
  const values: Record<string, string> = {};
  for (const k of KUBELET_SYSCTLS) {
    try {
      values[k] = readFileSync(`/proc/sys/${k}`, 'utf8').trim();
    } catch {
      /* not on this kernel */
    }
  }
  writeFileSync(SAVED_SYSCTLS, `${JSON.stringify(values, null, 2)}\n`);
}

/** kubelet processes of any instance on this machine. */
export function kubeletPids(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv0 = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0')[0] ?? '';
      if (argv0 === 'kubelet' || argv0.endsWith('/kubelet')) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out.filter(pidAlive);
}

/**
 * Writes back every saved value that differs now, when no kubelet of any instance runs any more;
 * returns what it changed ("kernel.panic 10→1"), or undefined while another kubelet still runs.
 */
export function restoreSysctls(): string[] | undefined {
  if (!existsSync(SAVED_SYSCTLS)) return [];
  if (kubeletPids().length > 0) return undefined;
  const saved = JSON.parse(readFileSync(SAVED_SYSCTLS, 'utf8')) as Record<string, string>;
  const changed: string[] = [];
  for (const [k, v] of Object.entries(saved)) {
    try {
      const now = readFileSync(`/proc/sys/${k}`, 'utf8').trim();
      if (now !== v) {
        writeFileSync(`/proc/sys/${k}`, v);
        changed.push(`${k.replace(/\//g, '.')} ${now}→${v}`);
      }
    } catch {
      /* not writable here */
    }
  }
  rmSync(SAVED_SYSCTLS, { force: true });
  return changed;
}

/** Processes one of whose arguments contains `needle` (e.g. containerd shims started for our socket). */
export function pidsWithArg(needle: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (argv.some((a) => a.includes(needle))) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out.filter((pid) => pid !== process.pid);
}

/** The mount namespace of a process, as `mnt:[inode]`. */
export function mountNamespaceOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/mnt`);
  } catch {
    return undefined;
  }
}

export function run(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
