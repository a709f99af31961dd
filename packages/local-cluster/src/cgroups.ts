// The node's cgroups (cgroup v1): kubelet's cgroupRoot, where the pods run, and a cgroup of its own
// for the node's programs (etcd, kube-apiserver, controllers, kubelet, kube-proxy, containerd and its
// shims), as a systemd node keeps them in system.slice beside kubepods.slice.
//
// Why: in cgroup v1 every thread of the root cgroup is weighed against the whole pod tree, so a busy
// kube-apiserver, etcd and kubelet (a control-plane rollout: dozens of runnable threads) left the pods
// a small fraction of the node's CPUs, and the mesh's proxies waited for a CPU far longer than they ran
// (docs/reliability.md, "the node's processes in a cgroup of their own"). Here the pod tree weighs
// what the node's CPUs are (1024 per CPU: what kubelet gives kubepods for its allocatable CPU) and the
// node's own programs weigh 1024 together.
// Without a cgroup v1 cpu hierarchy (a cgroup v2 host) nothing is changed.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { CGROUP_ROOT, SYSTEM_CGROUP } from './paths.js';

/** Every cgroup v1 hierarchy mounted under /sys/fs/cgroup (cpu, memory, pids, name=systemd...). */
export function cgroupHierarchies(): string[] {
  const out: string[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!pre || !post || !post.startsWith('cgroup ')) continue;
    const mountPoint = pre.split(' ')[4];
    if (mountPoint) out.push(mountPoint);
  }
  return out;
}

/** The mount point of the cgroup v1 hierarchy with the cpu controller, if there is one. */
export function cpuHierarchy(): string | undefined {
  return cgroupHierarchies().find((h) => existsSync(join(h, 'cpu.shares')));
}

/** The pod tree's weight: 1024 per CPU of the node, as kubelet weighs kubepods by its allocatable CPU. */
export function podTreeShares(): number {
  return availableParallelism() * 1024;
}

/** Gives kubelet's cgroupRoot its weight (the directory must exist). */
export function weighPodTree(): void {
  const cpu = cpuHierarchy();
  if (cpu) writeFileSync(join(cpu, CGROUP_ROOT, 'cpu.shares'), String(podTreeShares()));
}

/** The cgroup.procs file of the node programs' cgroup, made when absent; undefined without a cpu hierarchy. */
export function systemCgroupProcs(): string | undefined {
  const cpu = cpuHierarchy();
  if (!cpu) return undefined;
  const dir = join(cpu, SYSTEM_CGROUP);
  if (!existsSync(dir)) mkdirSync(dir);
  return join(dir, 'cgroup.procs');
}

/** The node programs' cgroup directory, when it exists. */
export function systemCgroupDir(): string | undefined {
  const cpu = cpuHierarchy();
  const dir = cpu && join(cpu, SYSTEM_CGROUP);
  return dir && existsSync(dir) ? dir : undefined;
}

/** The cpu cgroup of a process ("/minimesh-mm-system"), from /proc/<pid>/cgroup. */
export function cpuCgroupOf(pid: number): string | undefined {
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':');
    if (controllers?.split(',').includes('cpu')) return path;
  }
  return undefined;
}
