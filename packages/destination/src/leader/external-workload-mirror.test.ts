import { describe, expect, it } from 'vitest';
import type { ExternalWorkloadRecord, ServiceRecord } from '../k8s/records.js';
import { MIRROR_MANAGER, selects, toDesiredSlices } from './external-workload-mirror.js';

const svc = (over: Partial<ServiceRecord> = {}): ServiceRecord => ({
  namespace: 'shop',
  name: 'legacy',
  uid: 'svc-uid',
  type: 'ClusterIP',
  clusterIPs: ['10.96.0.40'],
  selector: { app: 'legacy' },
  ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 'http' }],
  ...over,
});

const ew = (name: string, over: Partial<ExternalWorkloadRecord> = {}): ExternalWorkloadRecord => ({
  namespace: 'shop',
  name,
  uid: `${name}-uid`,
  labels: { app: 'legacy' },
  identity: `${name}.shop.serviceaccount.identity.minimesh.cluster.local`,
  serverName: '',
  ips: ['192.168.50.10'],
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  ready: true,
  ...over,
});

describe('selects', () => {
  it.each([
    [{ app: 'a' }, { app: 'a', x: 'y' }, true],
    [{ app: 'a', tier: 'b' }, { app: 'a' }, false],
    [{}, { app: 'a' }, false],
    [undefined, { app: 'a' }, false],
  ])('%j selects %j: %s', (sel, labels, want) =>
    expect(selects(sel as Record<string, string> | undefined, labels)).toBe(want),
  );
});

describe('toDesiredSlices', () => {
  it('one slice for the selecting Service, labelled so kube-controller-manager ignores it, owned by the Service', () => {
    const [slice, ...rest] = toDesiredSlices(
      [svc()],
      [ew('vm-1'), ew('vm-2', { ips: ['192.168.50.11'], ready: false })],
    );
    expect(rest).toEqual([]);
    expect(slice?.metadata.labels).toEqual({
      'kubernetes.io/service-name': 'legacy',
      'endpointslice.kubernetes.io/managed-by': MIRROR_MANAGER,
    });
    expect(slice?.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Service', name: 'legacy', uid: 'svc-uid', controller: true },
    ]);
    expect(slice?.ports).toEqual([{ name: 'http', port: 8080, protocol: 'TCP' }]);
    expect(
      slice?.endpoints.map((e) => [e.addresses[0], e.conditions.ready, e.targetRef.kind, e.targetRef.name]),
    ).toEqual([
      ['192.168.50.10', true, 'ExternalWorkload', 'vm-1'],
      ['192.168.50.11', false, 'ExternalWorkload', 'vm-2'],
    ]);
  });

  it.each([
    ['another namespace', [svc()], [ew('vm', { namespace: 'other' })]],
    ['labels that do not match', [svc()], [ew('vm', { labels: { app: 'other' } })]],
    ['a selector-less Service', [svc({ selector: undefined })], [ew('vm')]],
    [
      'a named port the workload lacks',
      [svc()],
      [ew('vm', { ports: [{ name: 'grpc', port: 9090, protocol: 'TCP' }] })],
    ],
    ['only IPv6 addresses', [svc()], [ew('vm', { ips: ['fd00::1'] })]],
  ])('nothing for %s', (_n, services, workloads) => expect(toDesiredSlices(services, workloads)).toEqual([]));

  it('workloads with different port layouts get separate slices with stable names', () => {
    const slices = toDesiredSlices(
      [svc()],
      [ew('vm-1'), ew('vm-2', { ports: [{ name: 'http', port: 9000, protocol: 'TCP' }] })],
    );
    expect(slices.map((s) => s.ports[0]?.port).sort()).toEqual([8080, 9000]);
    expect(new Set(slices.map((s) => s.metadata.name)).size).toBe(2);
    expect(toDesiredSlices([svc()], [ew('vm-1')])[0]?.metadata.name).toBe(
      slices.find((s) => s.ports[0]?.port === 8080)?.metadata.name,
    );
  });
});
