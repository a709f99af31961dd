// `npm run cluster -- down` leaves nothing behind: no process (components, containerd shims,
// containers), network namespace, mount (nor the node's private mount namespace), cgroup, file, or
// changed host sysctl. It brings the cluster back afterwards, so it may run in any order with the
// other test files (vitest does not order files by name).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adminClient, createNamespace, ensureCluster, type KubeObject } from '../src/index.js';
import {
  cgroupDirs,
  cgroupPids,
  kubeletPids,
  mountNamespaceHolders,
  pidsWithArg,
  PRIVATE_TMPFS,
  SAVED_SYSCTLS,
} from '../src/host.js';
import { systemCgroupDir } from '../src/cgroups.js';
import { eventually, fixture, uniqueName } from './helpers.js';

const alive = (pid: number) =>
  existsSync(`/proc/${pid}`) && !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
const netnsList = () =>
  execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter(Boolean);
const netnsPids = (ns: string) =>
  execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);

afterAll(async () => {
  await ensureCluster();
}, 300_000);

describe('cluster down', () => {
  it('removes every process, network namespace, mount, cgroup and file it made, and restores the sysctls', async () => {
    const info = await ensureCluster();
    const ns = uniqueName('lc-down');
    await createNamespace(ns);
    // A pod with a memory-backed emptyDir (a tmpfs the kubelet mounts) and a second container.
    await adminClient().request('POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'mounts' },
      spec: {
        volumes: [{ name: 'mem', emptyDir: { medium: 'Memory' } }],
        containers: [
          { name: 'a', image: fixture('http-echo'), volumeMounts: [{ name: 'mem', mountPath: '/mem' }] },
          { name: 'b', image: fixture('tcp-server-first') },
        ],
      },
    });
    await eventually('pod running', async () => {
      const p: KubeObject = await adminClient().request('GET', `/api/v1/namespaces/${ns}/pods/mounts`);
      return p.status?.phase === 'Running';
    });

    expect(netnsList()).toContain(info.nodeNetns);
    const pids = new Set<number>([
      ...netnsPids(info.nodeNetns),
      ...cgroupPids(),
      ...pidsWithArg(info.containerdSocket),
    ]);
    const pidDir = join(info.dir, 'pids');
    for (const f of readdirSync(pidDir)) pids.add(Number(readFileSync(join(pidDir, f), 'utf8')));
    // etcd, kube-apiserver, controllers, containerd, kubelet, kube-proxy, bridges, shims, pause and app processes.
    expect(pids.size).toBeGreaterThan(15);
    expect(cgroupDirs().length).toBeGreaterThan(0);
    expect(systemCgroupDir()).toBeDefined();
    expect(mountNamespaceHolders().length).toBe(1);
    const saved = JSON.parse(readFileSync(SAVED_SYSCTLS, 'utf8')) as Record<string, string>;
    expect(Object.keys(saved)).toContain('kernel/panic');

    execFileSync('bash', ['../../scripts/cluster.sh', 'down'], { stdio: 'ignore' });

    expect(netnsList()).not.toContain(info.nodeNetns);
    expect([...pids].filter(alive)).toEqual([]);
    expect(pidsWithArg(info.containerdSocket).filter(alive)).toEqual([]);
    expect(mountNamespaceHolders()).toEqual([]);
    expect(cgroupDirs()).toEqual([]);
    expect(systemCgroupDir()).toBeUndefined();
    expect(
      readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .filter((l) => l.includes(info.dir)),
    ).toEqual([]);
    if (kubeletPids().length === 0) {
      // The last kubelet on the machine is gone: the host's values are back and the file is removed.
      for (const [k, v] of Object.entries(saved))
        expect(`${k}=${readFileSync(`/proc/sys/${k}`, 'utf8').trim()}`).toBe(`${k}=${v}`);
      expect(existsSync(SAVED_SYSCTLS)).toBe(false);
    } else {
      // Another instance's kubelet still runs: its down restores them, so the originals are kept for it.
      expect(existsSync(SAVED_SYSCTLS)).toBe(true);
    }
    expect(existsSync(info.dir)).toBe(false);
    // The fixed host paths kubelet and containerd use were never written on the host (tmpfs in the private namespace).
    for (const d of PRIVATE_TMPFS)
      if (existsSync(d)) expect(readdirSync(d).filter((e) => /kubelet|device-plugins|results/.test(e))).toEqual([]);
  });
});
