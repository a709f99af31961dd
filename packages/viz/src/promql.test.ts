import { describe, expect, it } from 'vitest';
import { edgeQueries, historyQueries, parseWindow, planStat, QueryError, quote, statQueries } from './promql.js';
import { parseResource } from './resource.js';

const res = (text: string, namespace = '') => ({ ...parseResource(text), namespace });

describe('parseWindow', () => {
  it.each([
    ['30s', 30],
    ['1m', 60],
    ['10m', 600],
    ['1h', 3600],
    ['1m30s', 90],
  ])('%s is %d s', (text, seconds) => expect(parseWindow(text)).toEqual({ text, seconds }));
  it.each(['5s', '1d', '1.5m', 'm', '', '25h'])('%s is refused', (text) =>
    expect(() => parseWindow(text)).toThrow(/time window ".*" is not valid: expected a duration from 10s to 24h/),
  );
});

describe('quote', () => {
  it('escapes what PromQL string literals escape', () => {
    expect(quote('a"b\\c')).toBe('"a\\"b\\\\c"');
  });
});

describe('stat queries', () => {
  it('every deployment of a namespace: inbound series grouped by namespace and deployment', () => {
    const { queries, plan } = statQueries({ resource: res('deploy'), namespace: 'shop', window: '1m' });
    expect(plan).toMatchObject({ direction: 'inbound', namespaceLabel: 'namespace', nameLabel: 'deployment' });
    expect(queries.requests).toBe(
      'sum(increase(response_total{direction="inbound", namespace="shop", deployment=~".+"}[1m])) by (namespace, deployment, classification, tls)',
    );
    expect(queries.p95).toBe(
      'histogram_quantile(0.95, sum(irate(response_latency_ms_bucket{direction="inbound", namespace="shop", deployment=~".+"}[1m])) by (le, namespace, deployment))',
    );
    expect(queries.tcpConnections).toBe(
      'sum(tcp_open_connections{direction="inbound", namespace="shop", deployment=~".+", peer="src"}) by (namespace, deployment)',
    );
    expect(queries.readBytes).toBe(
      'sum(irate(tcp_read_bytes_total{direction="inbound", namespace="shop", deployment=~".+", peer="src"}[1m])) by (namespace, deployment)',
    );
  });

  it('one pod, every namespace, namespaces', () => {
    expect(statQueries({ resource: res('po/web-1'), namespace: 'shop', window: '30s' }).queries.requests).toBe(
      'sum(increase(response_total{direction="inbound", namespace="shop", pod="web-1"}[30s])) by (namespace, pod, classification, tls)',
    );
    expect(statQueries({ resource: res('sts'), namespace: '', window: '1m' }).queries.requests).toBe(
      'sum(increase(response_total{direction="inbound", statefulset=~".+"}[1m])) by (namespace, statefulset, classification, tls)',
    );
    expect(statQueries({ resource: res('ns'), namespace: '', window: '1m' }).queries.requests).toBe(
      'sum(increase(response_total{direction="inbound"}[1m])) by (namespace, classification, tls)',
    );
    expect(statQueries({ resource: res('job/migrate'), namespace: 'db', window: '1m' }).queries.requests).toContain(
      'k8s_job="migrate"',
    );
  });

  it('--to: the rows measured by their own outbound proxies towards the target', () => {
    const { plan, queries } = statQueries({
      resource: res('deploy'),
      namespace: 'shop',
      to: res('deploy/server', 'backend'),
      window: '1m',
    });
    expect(plan).toMatchObject({ direction: 'outbound', namespaceLabel: 'namespace', nameLabel: 'deployment' });
    expect(queries.requests).toBe(
      'sum(increase(response_total{direction="outbound", namespace="shop", deployment=~".+", dst_namespace="backend", dst_deployment="server"}[1m])) by (namespace, deployment, classification, tls)',
    );
    expect(queries.tcpConnections).toContain('peer="dst"');
  });

  it('--from: the source measured by its outbound proxies, grouped by the dst_ labels', () => {
    const { plan, queries } = statQueries({
      resource: res('deploy'),
      namespace: 'backend',
      from: res('deploy/client', 'shop'),
      window: '1m',
    });
    expect(plan).toMatchObject({ direction: 'outbound', namespaceLabel: 'dst_namespace', nameLabel: 'dst_deployment' });
    expect(queries.requests).toBe(
      'sum(increase(response_total{direction="outbound", namespace="shop", deployment="client", dst_namespace="backend", dst_deployment=~".+"}[1m])) by (dst_namespace, dst_deployment, classification, tls)',
    );
  });

  it('refuses --from with --to', () => {
    expect(() =>
      planStat({
        resource: res('deploy'),
        namespace: 'a',
        from: res('deploy/x', 'a'),
        to: res('deploy/y', 'a'),
        window: '1m',
      }),
    ).toThrow(QueryError);
  });

  it('history: rates and success ratio over the same selector', () => {
    const h = historyQueries({ resource: res('deploy/web'), namespace: 'shop', window: '30s' });
    expect(h.rps).toBe(
      'sum(rate(response_total{direction="inbound", namespace="shop", deployment="web"}[30s])) by (namespace, deployment)',
    );
    expect(h.successRate).toContain('classification="success"');
  });
});

describe('edge queries', () => {
  it('from and into a namespace, with identities and the reason when there is no mTLS', () => {
    const q = edgeQueries({ kind: 'deployment', namespace: 'shop' });
    expect(q.outbound).toEqual([
      'count(response_total{direction="outbound", deployment=~".+", dst_deployment=~".+", namespace="shop"}) by (namespace, deployment, dst_namespace, dst_deployment, server_id, tls, no_tls_reason)',
      'count(response_total{direction="outbound", deployment=~".+", dst_deployment=~".+", dst_namespace="shop"}) by (namespace, deployment, dst_namespace, dst_deployment, server_id, tls, no_tls_reason)',
    ]);
    expect(q.inbound).toBe(
      'count(response_total{direction="inbound", namespace="shop", deployment=~".+"}) by (namespace, deployment, client_id, tls, no_tls_reason)',
    );
  });
  it('every namespace: one outbound query', () => {
    expect(edgeQueries({ kind: 'pod', namespace: '' }).outbound).toHaveLength(1);
  });
  it('is refused for namespaces', () => {
    expect(() => edgeQueries({ kind: 'namespace', namespace: '' })).toThrow('edges are between workloads');
  });
});
