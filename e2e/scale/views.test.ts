// The comparison behind the scale spec and bench: a stream's view against the API's EndpointSlices. It
// must see every kind of divergence, or the spec could not fail.
import { describe, expect, it } from 'vitest';
import { addSlice, compareViews } from '../../bench/scale/views.js';

const slice = (ns: string, svc: string, ips: Array<[string, boolean]>) => ({
  metadata: { namespace: ns, name: `${svc}-abc`, labels: { 'kubernetes.io/service-name': svc } },
  ports: [{ name: 'http', port: 8080 }],
  endpoints: ips.map(([ip, ready]) => ({ addresses: [ip], conditions: { ready } })),
});

describe('compareViews', () => {
  const truth = new Map<string, Set<string>>();
  addSlice(
    truth,
    slice('mm-scale-0', 'web-0', [
      ['10.64.0.1', true],
      ['10.64.0.2', true],
      ['10.64.0.3', false],
    ]),
  );
  addSlice(truth, slice('mm-scale-0', 'web-1', [['10.64.0.9', true]]));
  addSlice(truth, slice('kube-system', 'kube-dns', [['10.23.0.5', true]]));
  const web0 = 'web-0.mm-scale-0.svc.cluster.local:80';
  const web1 = 'web-1.mm-scale-0.svc.cluster.local:80';

  it('keeps the ready endpoints of the workload Services only', () => {
    expect([...truth.keys()].sort()).toEqual([web0, web1]);
    expect([...truth.get(web0)!].sort()).toEqual(['10.64.0.1:8080', '10.64.0.2:8080']);
  });

  it('finds nothing when every stream agrees with the API', () => {
    const d = compareViews(
      {
        [web0]: [{ ips: ['10.64.0.1:8080', '10.64.0.2:8080'], streams: 3 }],
        [web1]: [{ ips: ['10.64.0.9:8080'], streams: 3 }],
      },
      truth,
    );
    expect(d).toEqual({ diverging: 0, missing: 0, extra: 0, unwatched: 0, examples: [] });
  });

  it.each([
    ['a missed add', ['10.64.0.1:8080'], { diverging: 2, missing: 2, extra: 0 }],
    ['a lost remove', ['10.64.0.1:8080', '10.64.0.2:8080', '10.64.0.7:8080'], { diverging: 2, missing: 0, extra: 2 }],
    [
      'a not-ready endpoint',
      ['10.64.0.1:8080', '10.64.0.2:8080', '10.64.0.3:8080'],
      { diverging: 2, missing: 0, extra: 2 },
    ],
    ['an empty view', [], { diverging: 2, missing: 4, extra: 0 }],
  ])('finds %s in the streams that have it', (_what, ips, expected) => {
    const d = compareViews(
      {
        [web0]: [
          { ips: ['10.64.0.1:8080', '10.64.0.2:8080'], streams: 1 },
          { ips, streams: 2 },
        ],
        [web1]: [{ ips: ['10.64.0.9:8080'], streams: 3 }],
      },
      truth,
    );
    expect(d).toMatchObject({ ...expected, unwatched: 0 });
    expect(d.examples[0]).toContain(web0);
  });

  it('counts a Service no stream watched', () => {
    expect(compareViews({ [web0]: [{ ips: ['10.64.0.1:8080', '10.64.0.2:8080'], streams: 1 }] }, truth).unwatched).toBe(
      1,
    );
  });
});
