import { describe, expect, it } from 'vitest';
import { checkCni, type CniCheckInput } from './cni.js';

const chained = {
  ready: true,
  chained: true,
  confFile: '/etc/cni/net.d/10-k8s.conflist',
  plugin: { path: '/opt/cni/bin/minimesh-cni', bytes: 86_900_000 },
};
const base: CniCheckInput = {
  namespace: 'minimesh',
  enabled: true,
  daemonSet: { status: { desiredNumberScheduled: 2, numberReady: 2 } },
  nodes: ['a', 'b'],
  installers: [
    { pod: 'minimesh-cni-1', node: 'a', status: chained },
    { pod: 'minimesh-cni-2', node: 'b', status: chained },
  ],
};
const lines = (input: CniCheckInput) =>
  checkCni(input).map((r) => `${r.status} ${r.description}${r.status !== 'ok' ? `: ${r.detail}` : ''}`);

describe('checkCni', () => {
  it('says nothing outside CNI mode', () => {
    expect(checkCni({ ...base, enabled: false, daemonSet: undefined, installers: [] })).toEqual([]);
  });

  it('passes when every node has a ready installer whose conflist is chained', () => {
    expect(lines(base)).toEqual([
      'ok the minimesh-cni DaemonSet is ready on every node',
      'ok node a: the conflist chains minimesh-cni',
      'ok node b: the conflist chains minimesh-cni',
    ]);
    expect(checkCni(base)[1]?.detail).toBe(
      'last in /etc/cni/net.d/10-k8s.conflist; plugin /opt/cni/bin/minimesh-cni (86.9 MB)',
    );
  });

  it('names the node without the plugin, and why an installer is not ready', () => {
    const r = lines({
      ...base,
      installers: [
        { pod: 'minimesh-cni-1', node: 'a', status: chained },
        {
          pod: 'minimesh-cni-2',
          node: 'b',
          status: { ready: false, chained: false, reason: 'no CNI configuration in /etc/cni/net.d yet' },
        },
      ],
    });
    expect(r).toEqual([
      'fail the minimesh-cni DaemonSet is ready on every node: ready on 1 of 2 node(s); not on b',
      'ok node a: the conflist chains minimesh-cni',
      'fail node b: the conflist chains minimesh-cni: installer minimesh-cni-2: no CNI configuration in /etc/cni/net.d yet',
    ]);
    expect(checkCni({ ...base, installers: [] }).every((x) => x.status === 'fail' && x.retry)).toBe(true);
  });

  it('fails when CNI mode is on without the DaemonSet, or the DaemonSet runs without CNI mode', () => {
    expect(lines({ ...base, daemonSet: undefined })).toEqual([
      expect.stringMatching(
        /^fail the minimesh-cni DaemonSet exists: cni.enabled is true in ConfigMap minimesh\/minimesh-config/,
      ),
    ]);
    expect(lines({ ...base, enabled: false })[0]).toMatch(/^fail the injector runs in CNI mode/);
  });
});
