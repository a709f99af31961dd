// Done-when 1 (second half): `npm run cluster -- down` leaves no process, network namespace, mount
// or file behind. It brings the cluster back afterwards, so it may run in any order with the other
// test files (vitest does not order files by name).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adminClient, createNamespace, ensureCluster, type KubeObject } from '../src/index.js';
import { eventually, uniqueName } from './helpers.js';

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
}, 120_000);

describe('cluster down', () => {
  it('removes every process (the 127.0.0.1:6443 bridge too), network namespace, mount and file it made', async () => {
    const info = await ensureCluster();
    const ns = uniqueName('lc-down');
    await createNamespace(ns);
    // A pod with a memory-backed emptyDir (a tmpfs mount) and a mount point the agent had to create.
    await adminClient().request('POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'mounts' },
      spec: {
        volumes: [{ name: 'mem', emptyDir: { medium: 'Memory' } }],
        containers: [
          {
            name: 'c',
            image: 'busybox',
            command: ['sleep', '3600'],
            volumeMounts: [{ name: 'mem', mountPath: `/mm-down-test/${ns}` }],
          },
        ],
      },
    });
    await eventually('pod running', async () => {
      const p: KubeObject = await adminClient().request('GET', `/api/v1/namespaces/${ns}/pods/mounts`);
      return p.status?.phase === 'Running';
    });

    const ours = netnsList().filter((n) => n === 'mm-node' || n.startsWith('mm-pod-'));
    expect(ours).toContain('mm-node');
    const pids = new Set<number>(ours.flatMap(netnsPids));
    const pidDir = join(info.dir, 'pids');
    for (const f of readdirSync(pidDir)) pids.add(Number(readFileSync(join(pidDir, f), 'utf8')));
    expect(pids.size).toBeGreaterThan(6);
    const mountsBefore = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((l) => l.includes(info.dir));
    expect(mountsBefore.length).toBeGreaterThan(0);

    execFileSync('bash', ['../../scripts/cluster.sh', 'down'], { stdio: 'ignore' });

    expect(netnsList().filter((n) => n === 'mm-node' || n.startsWith('mm-pod-'))).toEqual([]);
    expect([...pids].filter(alive)).toEqual([]);
    expect(
      readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .filter((l) => l.includes(info.dir)),
    ).toEqual([]);
    expect(existsSync(info.dir)).toBe(false);
    expect(existsSync(`/mm-down-test/${ns}`)).toBe(false);
    expect(existsSync('/mm-down-test')).toBe(false);
  });
});
