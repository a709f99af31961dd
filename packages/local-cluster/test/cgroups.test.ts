// The node's CPU is shared as on a systemd node: its own programs in one cgroup, the pods in kubelet's
// cgroupRoot weighing 1024 per CPU (src/cgroups.ts says why).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureCluster } from '../src/index.js';
import { cpuCgroupOf, cpuHierarchy, podTreeShares } from '../src/cgroups.js';
import { cgroupPids } from '../src/host.js';
import { CGROUP_ROOT, SYSTEM_CGROUP } from '../src/paths.js';
import { pidAlive } from '../src/procs.js';

describe.skipIf(cpuHierarchy() === undefined)('the node cgroups (cgroup v1)', () => {
  it("runs every program of the node in its own cgroup, and weighs the pod tree by the node's CPUs", async () => {
    const info = await ensureCluster();
    const pidDir = join(info.dir, 'pids');
    const programs = new Map<string, string | undefined>();
    for (const f of readdirSync(pidDir)) {
      const pid = Number(readFileSync(join(pidDir, f), 'utf8'));
      if (pidAlive(pid)) programs.set(f.replace(/\.pid$/, ''), cpuCgroupOf(pid));
    }
    for (const name of ['etcd', 'kube-apiserver', 'kubelet', 'containerd'])
      expect(programs.get(name), `${name}: ${JSON.stringify(Object.fromEntries(programs))}`).toBe(SYSTEM_CGROUP);
    expect([...programs.values()].filter((cg) => cg !== SYSTEM_CGROUP)).toEqual([]);

    const cpu = cpuHierarchy()!;
    expect(Number(readFileSync(join(cpu, CGROUP_ROOT, 'cpu.shares'), 'utf8'))).toBe(podTreeShares());
    expect(podTreeShares()).toBeGreaterThanOrEqual(1024);
    // The pods (CoreDNS at least) run below the cgroupRoot, in kubelet's kubepods tree.
    const inPods = cgroupPids().filter(pidAlive);
    expect(inPods.length).toBeGreaterThan(0);
    for (const pid of inPods) expect(cpuCgroupOf(pid)).toMatch(new RegExp(`^${CGROUP_ROOT}/kubepods`));
  }, 300_000);
});
