import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { ProxyMetrics, toLabels } from './metrics.js';

describe('ProxyMetrics', () => {
  it('counts requests and responses with Linkerd names and labels', async () => {
    const m = new ProxyMetrics(new Registry());
    const labels = toLabels({
      direction: 'outbound',
      authority: 'web.default.svc.cluster.local:80',
      targetAddr: '10.1.2.3:8080',
      tls: 'true',
      serverId: 'web.default.serviceaccount.identity.minimesh.cluster.local',
      dst: { namespace: 'default', pod: 'web-0', unknown_label: 'x' },
    });
    const t0 = m.request(labels);
    m.response(labels, t0, 503, undefined, false);
    m.response(labels, t0, 200, 0, false);
    const text = await m.registry.metrics();
    expect(text).toContain(
      'request_total{direction="outbound",authority="web.default.svc.cluster.local:80",target_addr="10.1.2.3:8080",tls="true",server_id="web.default.serviceaccount.identity.minimesh.cluster.local"',
    );
    // Labels that do not apply are left out, not rendered empty.
    expect(text).not.toMatch(/request_total\{[^}]*client_id=/);
    expect(text).not.toContain('=""');
    expect(text).toMatch(
      /response_total\{[^}]*dst_namespace="default",dst_pod="web-0"[^}]*status_code="503"[^}]*classification="failure"/,
    );
    expect(text).toMatch(/response_total\{[^}]*status_code="200",grpc_status="0",classification="success"/);
    expect(text).toMatch(/response_latency_ms_bucket\{le="1",[^}]*status_code="200"\}/);
    expect(text).not.toContain('unknown_label');
  });

  it('inbound plaintext carries no_identity with a reason; mTLS carries client_id', () => {
    expect(toLabels({ direction: 'inbound', targetAddr: '10.0.0.1:80', tls: 'no_identity' })).toMatchObject({
      tls: 'no_identity',
      no_tls_reason: 'not_provided_by_remote',
      client_id: '',
    });
    expect(toLabels({ direction: 'inbound', targetAddr: '10.0.0.1:80', tls: 'true', clientId: 'a.b' })).toMatchObject({
      tls: 'true',
      no_tls_reason: '',
      client_id: 'a.b',
    });
    expect(
      toLabels({ direction: 'inbound', targetAddr: '10.0.0.1:443', tls: 'opaque', sni: 'example.com' }),
    ).toMatchObject({ tls: 'opaque', sni: 'example.com' });
  });

  it('tracks TCP connections open → close with bytes', async () => {
    const m = new ProxyMetrics(new Registry());
    const c = m.connection(
      toLabels({ direction: 'inbound', targetAddr: '10.0.0.1:80', tls: 'true', clientId: 'a.b', authority: 'x' }),
    );
    c.read(10);
    c.write(20);
    expect(await m.registry.getSingleMetricAsString('tcp_open_connections')).toMatch(/peer="src"[^}]*\} 1/);
    c.close(false);
    c.close(false);
    const text = await m.registry.metrics();
    expect(text).toMatch(/tcp_open_connections\{[^}]*\} 0/);
    expect(text).toMatch(/tcp_close_total\{[^}]*\} 1/);
    expect(text).toMatch(/tcp_read_bytes_total\{[^}]*\} 10/);
    expect(text).toMatch(/tcp_write_bytes_total\{[^}]*\} 20/);
  });
});
