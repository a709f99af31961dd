import { describe, expect, it } from 'vitest';
import { statQueries } from './promql.js';
import { parseResource } from './resource.js';
import { renderStat, toStatJson, toStatRows, type StatResults } from './stat.js';
import { groupWorkloads, toPodInfo, type PodLike } from './workloads.js';

const deployPod = (deploy: string, suffix: string, meshed = true, phase = 'Running'): PodLike => ({
  metadata: {
    name: `${deploy}-5f-${suffix}`,
    namespace: 'demo',
    labels: { 'pod-template-hash': '5f' },
    ownerReferences: [{ kind: 'ReplicaSet', name: `${deploy}-5f`, controller: true }],
  },
  spec: { containers: [{ name: 'app' }], initContainers: meshed ? [{ name: 'minimesh-proxy' }] : [] },
  status: { phase },
});

const empty = (): StatResults => ({
  requests: [],
  p50: [],
  p95: [],
  p99: [],
  tcpConnections: [],
  readBytes: [],
  writeBytes: [],
});

describe('stat rows', () => {
  const pods = [
    deployPod('server', 'a'),
    deployPod('server', 'b'),
    deployPod('server', 'c', true, 'Succeeded'),
    deployPod('client', 'a'),
    deployPod('batch', 'a', false),
  ].map(toPodInfo);
  const { plan } = statQueries({ resource: parseResource('deploy'), namespace: 'demo', window: '1m' });
  const m = (deployment: string, extra: Record<string, string> = {}) => ({ namespace: 'demo', deployment, ...extra });

  it('joins workloads and metrics: success rate, RPS over the window, quantiles, TCP, mTLS share', () => {
    const results = empty();
    results.requests = [
      { metric: m('server', { classification: 'success', tls: 'true' }), value: 114 },
      { metric: m('server', { classification: 'failure', tls: 'true' }), value: 6 },
      { metric: m('ghost', { classification: 'success', tls: 'true' }), value: 60 },
    ];
    results.p50 = [{ metric: m('server'), value: 0.6 }];
    results.p95 = [{ metric: m('server'), value: 2.3 }];
    results.p99 = [
      { metric: m('server'), value: 24.7 },
      { metric: m('client'), value: Number.NaN },
    ];
    results.tcpConnections = [{ metric: m('server'), value: 2 }];
    const rows = toStatRows({
      kind: 'deployment',
      plan,
      windowSeconds: 60,
      workloads: groupWorkloads(pods, 'deployment'),
      results,
    });
    expect(rows.map((r) => r.name)).toEqual(['batch', 'client', 'server']);
    const server = rows[2]!;
    expect(server).toMatchObject({ meshedPods: 2, totalPods: 2, requests: 120, rps: 2, success: 0.95, tls: 1 });
    expect(server).toMatchObject({ latencyP50: 0.6, latencyP95: 2.3, latencyP99: 24.7, tcpConnections: 2 });
    expect(rows[1]).toMatchObject({ name: 'client', rps: null, success: null, latencyP99: null });
    expect(rows[0]).toMatchObject({ name: 'batch', meshedPods: 0, totalPods: 1 });
    expect(renderStat(rows)).toBe(
      [
        'NAME     MESHED   SUCCESS      RPS   LATENCY_P50   LATENCY_P95   LATENCY_P99   TCP_CONN',
        'batch       0/1         -        -             -             -             -          -',
        'client      1/1         -        -             -             -             -          -',
        'server      2/2    95.00%   2.0rps         0.6ms         2.3ms          25ms          2',
        '',
      ].join('\n'),
    );
    const withGhost = toStatRows({
      kind: 'deployment',
      plan,
      windowSeconds: 60,
      workloads: groupWorkloads(pods, 'deployment'),
      results,
      includeMetricsOnly: true,
    });
    expect(withGhost.find((r) => r.name === 'ghost')).toMatchObject({ meshedPods: 0, totalPods: 0, rps: 1 });
  });

  it('-o wide and -o json', () => {
    const results = empty();
    results.requests = [{ metric: m('server', { classification: 'success', tls: 'no_identity' }), value: 30 }];
    results.readBytes = [{ metric: m('server'), value: 2048 }];
    const rows = toStatRows({
      kind: 'deployment',
      plan,
      windowSeconds: 60,
      workloads: groupWorkloads(pods, 'deployment', 'server'),
      results,
    });
    expect(renderStat(rows, { wide: true, allNamespaces: true }).split('\n')[0]).toBe(
      'NAMESPACE   NAME     MESHED   SUCCESS      RPS   LATENCY_P50   LATENCY_P95   LATENCY_P99   TCP_CONN    MTLS   READ_BYTES/SEC   WRITE_BYTES/SEC',
    );
    expect(renderStat(rows, { wide: true }).split('\n')[1]).toContain('-   0.00%         2.0KiB/s                 -');
    expect(toStatJson(rows)).toEqual([
      {
        namespace: 'demo',
        kind: 'deployment',
        name: 'server',
        meshed: '2/2',
        success: 1,
        rps: 0.5,
        latency_ms_p50: null,
        latency_ms_p95: null,
        latency_ms_p99: null,
        tcp_open_connections: null,
        tls: 0,
        read_bytes_per_sec: 2048,
        write_bytes_per_sec: null,
      },
    ]);
  });

  it('pods get a STATUS column; --from rows come from the dst_ labels', () => {
    const podRows = toStatRows({
      kind: 'pod',
      plan: statQueries({ resource: parseResource('po'), namespace: 'demo', window: '1m' }).plan,
      windowSeconds: 60,
      workloads: groupWorkloads(pods, 'pod', 'server-5f-a'),
      results: empty(),
    });
    expect(renderStat(podRows).split('\n')[0]).toMatch(/^NAME +STATUS +MESHED/);
    expect(podRows[0]).toMatchObject({ status: 'Running', meshedPods: 1, totalPods: 1 });

    const from = statQueries({
      resource: parseResource('deploy'),
      namespace: 'demo',
      from: { ...parseResource('deploy/client'), namespace: 'demo' },
      window: '1m',
    }).plan;
    const results = empty();
    results.requests = [
      {
        metric: { dst_namespace: 'demo', dst_deployment: 'server', classification: 'success', tls: 'true' },
        value: 60,
      },
    ];
    const rows = toStatRows({
      kind: 'deployment',
      plan: from,
      windowSeconds: 60,
      workloads: groupWorkloads(pods, 'deployment'),
      results,
    });
    expect(rows.find((r) => r.name === 'server')).toMatchObject({ rps: 1, success: 1 });
  });
});
