// What /proc says of a process: CPU seconds and memory. Shared by the side-by-side bench (bench.ts) and
// the floor of a Node proxy (floor.ts), so both measure the same way.
import { readFileSync } from 'node:fs';

/** CPU seconds of a process so far (user + kernel), and the kernel's part (utime, stime of /proc/<pid>/stat). */
export function procStat(pid: number): { cpu: number; sys: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { cpu: (Number(f[11]) + Number(f[12])) / 100, sys: Number(f[12]) / 100 };
}

/**
 * RSS, its anonymous part (/proc/<pid>/status RssAnon) and the private memory (USS: Private_Clean +
 * Private_Dirty of /proc/<pid>/smaps_rollup, the pages no other process maps). File-backed pages of the
 * node binary are shared by every proxy on a node (in RSS, not in USS); anonymous pages are each proxy's own.
 */
export function memMb(pid: number): { rss: number; anon: number; priv: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const r = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (text: string, k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) / 1024;
  return {
    rss: kb(s, 'VmRSS'),
    anon: kb(s, 'RssAnon'),
    priv: kb(r, 'Private_Clean') + kb(r, 'Private_Dirty') + kb(r, 'Private_Hugetlb'),
  };
}
