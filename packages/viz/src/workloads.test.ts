import { describe, expect, it } from 'vitest';
import { groupWorkloads, toPodInfo, type PodLike } from './workloads.js';

const pod = (name: string, over: Partial<PodLike['metadata']> = {}, meshed = true, phase = 'Running'): PodLike => ({
  metadata: { name, namespace: 'shop', ...over },
  spec: {
    containers: [{ name: 'app' }],
    initContainers: meshed ? [{ name: 'minimesh-init' }, { name: 'minimesh-proxy' }] : [],
    serviceAccountName: 'web',
  },
  status: { phase, podIP: '10.23.0.9' },
});

describe('toPodInfo', () => {
  it('a Deployment pod: its ReplicaSet and, by the pod-template-hash, its Deployment', () => {
    const p = toPodInfo(
      pod('web-7d9f-x', {
        labels: { 'pod-template-hash': '7d9f' },
        ownerReferences: [{ kind: 'ReplicaSet', name: 'web-7d9f', controller: true }],
      }),
    );
    expect(p).toEqual({
      name: 'web-7d9f-x',
      namespace: 'shop',
      meshed: true,
      status: 'Running',
      ip: '10.23.0.9',
      serviceAccount: 'web',
      owners: { replicaset: 'web-7d9f', deployment: 'web' },
    });
  });

  it('a bare ReplicaSet, a StatefulSet, a Job, a classic sidecar, an unmeshed pod, a terminating pod', () => {
    expect(toPodInfo(pod('a', { ownerReferences: [{ kind: 'ReplicaSet', name: 'rs1' }] })).owners).toEqual({
      replicaset: 'rs1',
    });
    expect(
      toPodInfo(pod('db-0', { ownerReferences: [{ kind: 'StatefulSet', name: 'db', controller: true }] })).owners,
    ).toEqual({
      statefulset: 'db',
    });
    expect(
      toPodInfo(pod('m', { ownerReferences: [{ kind: 'Job', name: 'migrate', controller: true }] })).owners,
    ).toEqual({
      job: 'migrate',
    });
    const classic: PodLike = {
      metadata: { name: 'c' },
      spec: { containers: [{ name: 'minimesh-proxy' }, { name: 'app' }] },
    };
    expect(toPodInfo(classic).meshed).toBe(true);
    expect(toPodInfo(pod('u', {}, false)).meshed).toBe(false);
    expect(toPodInfo(pod('t', { deletionTimestamp: '2026-01-01T00:00:00Z' })).status).toBe('Terminating');
  });
});

describe('groupWorkloads', () => {
  const rs = (name: string, hash: string) => ({
    labels: { 'pod-template-hash': hash },
    ownerReferences: [{ kind: 'ReplicaSet', name: `${name}-${hash}`, controller: true }],
  });
  const pods = [
    toPodInfo(pod('web-1a-x', rs('web', '1a'))),
    toPodInfo(pod('web-1a-y', rs('web', '1a'), false)),
    toPodInfo(pod('api-2b-x', rs('api', '2b'))),
    toPodInfo(pod('lonely')),
  ];
  it('groups by deployment, sorted, and keeps pods of no deployment out', () => {
    const ws = groupWorkloads(pods, 'deployment');
    expect(ws.map((w) => [w.name, w.pods.length])).toEqual([
      ['api', 1],
      ['web', 2],
    ]);
  });
  it('one by name; pods; namespaces', () => {
    expect(groupWorkloads(pods, 'deployment', 'web').map((w) => w.name)).toEqual(['web']);
    expect(groupWorkloads(pods, 'pod')).toHaveLength(4);
    expect(groupWorkloads(pods, 'namespace').map((w) => [w.name, w.pods.length])).toEqual([['shop', 4]]);
  });
});
