// What the control-plane benches read about processes: CPU and RSS from /proc, the kube-apiserver's
// pid, and a free loopback port for a program to listen on.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** CPU seconds (user + system) and RSS of a process; NaN when it is gone. */
export function procStat(pid: number): { cpu: number; rssMb: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return {
      cpu: (Number(stat[11]) + Number(stat[12])) / 100,
      rssMb: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024,
    };
  } catch {
    return { cpu: NaN, rssMb: NaN };
  }
}

/** The kube-apiserver process (the local cluster runs it in the node's network namespace, visible in /proc). */
export function apiServerPid(): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0')[0]?.endsWith('kube-apiserver')) return Number(d);
    } catch {
      // gone
    }
  }
  return undefined;
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
