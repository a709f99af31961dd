// Reading a container's memory on a cgroup v1 node: its cgroup's memory.stat and usage, its process's
// /proc figures, and the memory cgroup each resident page of the process is charged to.
import { closeSync, existsSync, openSync, readFileSync, readSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const MEMCG = '/sys/fs/cgroup/memory';
const PAGE = 4096;

/**
 * Every memory cgroup of the machine (the hierarchy is small), by inode and by directory name: the pods'
 * under the node's cgroup root (/sys/fs/cgroup/memory/minimesh-*), and the others, to name where a page is
 * charged. A tear-down under way may remove a directory while it is walked: skipped.
 */
export function cgroupTree(): { byIno: Map<number, string>; byName: Map<string, string> } {
  const byIno = new Map<number, string>();
  const byName = new Map<string, string>();
  const walk = (dir: string, depth: number) => {
    try {
      byIno.set(statSync(dir).ino, dir);
      byName.set(dir.slice(dir.lastIndexOf('/') + 1), dir);
      if (depth === 0) return;
      for (const e of readdirSync(dir, { withFileTypes: true }))
        if (e.isDirectory()) walk(join(dir, e.name), depth - 1);
    } catch {
      /* removed meanwhile */
    }
  };
  walk(MEMCG, 8);
  return { byIno, byName };
}

/** The memory cgroup of a process (its line of /proc/<pid>/cgroup), as a path under MEMCG. */
export function memcgOf(pid: number): string | undefined {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes('memory'));
  const rel = line?.split(':')[2];
  return rel === undefined ? undefined : rel === '/' ? MEMCG : `${MEMCG}${rel}`;
}

export function memoryStat(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(join(dir, 'memory.stat'), 'utf8').split('\n')) {
    const [k, v] = line.split(' ');
    if (k && v) out[k] = Number(v);
  }
  return out;
}
const readNum = (file: string): number => Number(readFileSync(file, 'utf8').trim());

export interface CgroupFigures {
  path: string;
  usage: number;
  /** usage − total_inactive_file, as cAdvisor (the kubelet) computes the working set. */
  workingSet: number;
  kmem: number;
  total_rss: number;
  total_rss_huge: number;
  total_cache: number;
  total_mapped_file: number;
  total_shmem: number;
  total_active_file: number;
  total_inactive_file: number;
  total_active_anon: number;
  total_inactive_anon: number;
}
export function cgroupFigures(dir: string): CgroupFigures {
  const s = memoryStat(dir);
  const usage = readNum(join(dir, 'memory.usage_in_bytes'));
  const kmemFile = join(dir, 'memory.kmem.usage_in_bytes');
  const inactive = s.total_inactive_file ?? 0;
  return {
    path: dir.startsWith(`${MEMCG}/`) ? dir.slice(MEMCG.length) : dir,
    usage,
    workingSet: Math.max(0, usage - inactive),
    kmem: existsSync(kmemFile) ? readNum(kmemFile) : NaN,
    total_rss: s.total_rss ?? NaN,
    total_rss_huge: s.total_rss_huge ?? NaN,
    total_cache: s.total_cache ?? NaN,
    total_mapped_file: s.total_mapped_file ?? NaN,
    total_shmem: s.total_shmem ?? NaN,
    total_active_file: s.total_active_file ?? NaN,
    total_inactive_file: inactive,
    total_active_anon: s.total_active_anon ?? NaN,
    total_inactive_anon: s.total_inactive_anon ?? NaN,
  };
}

export interface ProcFigures {
  pid: number;
  comm: string;
  threads: number;
  rss: number;
  rssAnon: number;
  rssFile: number;
  pss: number;
  uss: number;
  sharedClean: number;
  anonymous: number;
}
export function procFigures(pid: number): ProcFigures {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (text: string, k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return {
    pid,
    comm: readFileSync(`/proc/${pid}/comm`, 'utf8').trim(),
    threads: Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 0),
    rss: kb(status, 'VmRSS'),
    rssAnon: kb(status, 'RssAnon'),
    rssFile: kb(status, 'RssFile'),
    pss: kb(rollup, 'Pss'),
    uss: kb(rollup, 'Private_Clean') + kb(rollup, 'Private_Dirty') + kb(rollup, 'Private_Hugetlb'),
    sharedClean: kb(rollup, 'Shared_Clean'),
    anonymous: kb(rollup, 'Anonymous'),
  };
}

/** The container's main process: the first pid of its cgroup (the proxy is one process; threads are not listed). */
export function cgroupPid(dir: string): number {
  const pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  if (pids.length === 0) throw new Error(`no process in ${dir}`);
  return pids[0]!;
}

/**
 * Where a page is charged: the container's own cgroup; its pod's app container; its pod's cgroup or another
 * of its containers (proxy-init, pause); another proxy container; another pod's container; the cgroup of the
 * node's containerd (which unpacks image layers, and with them the executables' pages); the root cgroup;
 * another cgroup of the machine; a cgroup no longer in the tree (removed, its charged pages kept).
 */
export type Owner = 'own' | 'app' | 'pod' | 'otherProxy' | 'otherContainer' | 'runtime' | 'root' | 'other' | 'gone';
export interface PageCharges {
  /** Bytes of resident pages by where they are charged, file-backed and anonymous apart. */
  file: Partial<Record<Owner, number>>;
  anon: Partial<Record<Owner, number>>;
  /** The executable's resident pages (node or linkerd2-proxy) by owner, and its device:inode as mapped. */
  exe: { path: string; devIno: string; charged: Partial<Record<Owner, number>> };
}

/**
 * Where each resident page of `pid` is charged: its page frame from /proc/<pid>/pagemap (bit 63 present,
 * bit 61 file-backed or shared anonymous, bits 0-54 the frame), the inode of its memory cgroup from
 * /proc/kpagecgroup, the cgroup named through `tree`.
 */
export function pageCharges(
  pid: number,
  own: string,
  tree: ReturnType<typeof cgroupTree>,
  classify: (cgroupPath: string) => Owner,
): PageCharges {
  const maps = readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n').filter(Boolean);
  const exeReal = readlinkSync(`/proc/${pid}/exe`);
  const pm = openSync(`/proc/${pid}/pagemap`, 'r');
  const kc = openSync('/proc/kpagecgroup', 'r');
  const out: PageCharges = { file: {}, anon: {}, exe: { path: exeReal, devIno: '', charged: {} } };
  const owners = new Map<number, Owner>();
  const ownerOf = (ino: number): Owner => {
    let o = owners.get(ino);
    if (o === undefined) {
      const p = tree.byIno.get(ino);
      o = p === undefined ? 'gone' : p === own ? 'own' : classify(p);
      owners.set(ino, o);
    }
    return o;
  };
  const b8 = Buffer.alloc(8);
  try {
    for (const line of maps) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ (\S+) (\d+)\s*(.*)$/.exec(line);
      if (!m) continue;
      const start = parseInt(m[1]!, 16);
      const end = parseInt(m[2]!, 16);
      const name = m[6] ?? '';
      if (name === '[vsyscall]') continue;
      const isExe = name === exeReal;
      if (isExe && !out.exe.devIno) out.exe.devIno = `${m[4]}:${m[5]}`;
      // In chunks: a read of /proc/<pid>/pagemap may return less than asked (V8 reserves large ranges).
      const CHUNK = 65536;
      for (let first = start / PAGE; first < end / PAGE; first += CHUNK) {
        const n = Math.min(CHUNK, end / PAGE - first);
        const buf = Buffer.alloc(n * 8);
        let got = 0;
        while (got < buf.length) {
          const r = readSync(pm, buf, got, buf.length - got, first * 8 + got);
          if (r <= 0) break;
          got += r;
        }
        for (let i = 0; i < got / 8; i++) {
          const v = buf.readBigUInt64LE(i * 8);
          if (!(v >> 63n)) continue; // not present (or swapped)
          const pfn = Number(v & ((1n << 55n) - 1n));
          if (pfn === 0) continue;
          readSync(kc, b8, 0, 8, pfn * 8);
          const owner = ownerOf(Number(b8.readBigUInt64LE(0)));
          const file = ((v >> 61n) & 1n) === 1n;
          const bucket = file ? out.file : out.anon;
          bucket[owner] = (bucket[owner] ?? 0) + PAGE;
          if (isExe) out.exe.charged[owner] = (out.exe.charged[owner] ?? 0) + PAGE;
        }
      }
    }
  } finally {
    closeSync(pm);
    closeSync(kc);
  }
  return out;
}

/** The process's executable as mapped: its path and the device:inode /proc/<pid>/maps shows (the file whose pages are shared). */
export function exeMapping(pid: number): { path: string; devIno: string } {
  const path = readlinkSync(`/proc/${pid}/exe`);
  const line = readFileSync(`/proc/${pid}/maps`, 'utf8')
    .split('\n')
    .find((l) => l.endsWith(` ${path}`));
  const f = line?.split(/\s+/);
  return { path, devIno: f ? `${f[3]}:${f[4]}` : '' };
}
