// stat-outbound's queries, rows and table over Prometheus answers shaped as minimesh-proxy's route
// metrics scrape (Linkerd's names and labels).
import { describe, expect, it } from 'vitest';
import type { Sample } from './prometheus.js';
import { renderStatOutbound, statOutboundQueries, toStatOutboundRows } from './stat-outbound.js';

const route = {
  parent_namespace: 'shop',
  parent_name: 'web',
  parent_port: '80',
  route_kind: 'HTTPRoute',
  route_namespace: 'shop',
  route_name: 'web-split',
};
const sample = (metric: Record<string, string>, value: number): Sample => ({ metric: { ...route, ...metric }, value });
const backend = (name: string) => ({ backend_namespace: 'shop', backend_name: name, backend_port: '80' });

describe('viz stat-outbound', () => {
  it("queries the workload's route and backend series by Linkerd's names", () => {
    const q = statOutboundQueries({ kind: 'deployment', namespace: 'shop', name: 'client', window: '1m' });
    expect(q.httpRoute).toBe(
      'sum by (parent_kind, parent_namespace, parent_name, parent_port, route_kind, route_namespace, route_name, http_status, error) (increase(outbound_http_route_request_statuses_total{namespace="shop", deployment="client"}[1m]))',
    );
    expect(q.grpcBackend).toContain(
      'outbound_grpc_route_backend_response_statuses_total{namespace="shop", deployment="client"}[1m]',
    );
    expect(q.httpBackendp99).toContain('histogram_quantile(0.99, sum by (le, parent_kind, parent_namespace');
    expect(q.retries).toContain('outbound_http_route_retry_requests_total');
  });

  it('a route with its backends: success rate, RPS, latency, timeouts, retries; sorted route then backends', () => {
    const rows = toStatOutboundRows(
      {
        httpRoute: [
          sample({ http_status: '200' }, 540),
          sample({ http_status: '503' }, 60),
          sample({ error: 'REQUEST_TIMEOUT' }, 6),
          sample({ route_name: 'other', http_status: '200' }, 60),
        ],
        httpBackend: [
          sample({ ...backend('web-v2'), http_status: '503' }, 60),
          sample({ ...backend('web-v1'), http_status: '200' }, 540),
        ],
        httpRoutep50: [sample({}, 0.012)],
        httpBackendp50: [sample({ ...backend('web-v1') }, 0.004), sample({ ...backend('web-v2') }, NaN)],
        retries: [sample({}, 12)],
      },
      60,
    );
    expect(rows.map((r) => `${r.route} ${r.backend ?? '-'}`)).toEqual([
      'other -',
      'web-split -',
      'web-split web-v1:80',
      'web-split web-v2:80',
    ]);
    const split = rows[1]!;
    expect(split.requests).toBe(606);
    expect(split.successRate).toBeCloseTo(540 / 606);
    expect(split.rps).toBeCloseTo(10.1);
    expect(split.p50Ms).toBeCloseTo(12);
    expect(split.timeouts).toBe(6);
    expect(split.retries).toBe(12);
    expect(rows[2]!.successRate).toBe(1);
    expect(rows[3]!.successRate).toBe(0);
    expect(rows[3]!.p50Ms).toBeNull();
    expect(renderStatOutbound(rows)).toBe(
      [
        'SERVICE   ROUTE       TYPE        BACKEND     SUCCESS       RPS   LATENCY_P50   LATENCY_P95   LATENCY_P99   TIMEOUTS   RETRIES',
        'web:80    other       HTTPRoute               100.00%    1.0rps             -             -             -          0         0',
        'web:80    web-split   HTTPRoute                89.11%   10.1rps          12ms             -             -          6        12',
        '          ├─►                     web-v1:80   100.00%    9.0rps           4ms             -             -          0',
        '          └─►                     web-v2:80     0.00%    1.0rps             -             -             -          0',
        '',
      ].join('\n'),
    );
  });

  it('gRPC routes: OK and client errors succeed, UNAVAILABLE and errors fail', () => {
    const rows = toStatOutboundRows(
      {
        grpcRoute: [
          sample({ route_kind: 'GRPCRoute', grpc_status: 'OK' }, 8),
          sample({ route_kind: 'GRPCRoute', grpc_status: 'NOT_FOUND' }, 1),
          sample({ route_kind: 'GRPCRoute', grpc_status: 'UNAVAILABLE' }, 1),
        ],
      },
      10,
    );
    expect(rows[0]!.successRate).toBeCloseTo(0.9);
    expect(rows[0]!.routeKind).toBe('GRPCRoute');
  });

  it('egress: rows of an EgressNetwork parent are named as such, apart from a Service of the same name', () => {
    const egress = {
      parent_kind: 'EgressNetwork',
      parent_namespace: 'minimesh',
      parent_name: 'web',
      parent_port: '80',
    };
    const rows = toStatOutboundRows(
      {
        httpRoute: [
          sample(
            {
              ...egress,
              route_kind: 'default',
              route_namespace: '',
              route_name: 'http-egress-deny',
              http_status: '403',
            },
            30,
          ),
          sample({ ...egress, route_name: 'web-split', http_status: '200' }, 60),
          sample({ parent_kind: 'Service', http_status: '200' }, 120),
        ],
      },
      60,
    );
    expect(rows.map((r) => `${r.service} ${r.route} ${r.requests} ${r.successRate}`)).toEqual([
      'EgressNetwork/web:80 web-split 60 1',
      'EgressNetwork/web:80 http-egress-deny 30 1',
      'web:80 web-split 120 1',
    ]);
  });

  it('opaque and TLS egress routes: rows of connections, those closed with an error failed', () => {
    const egress = {
      parent_kind: 'EgressNetwork',
      parent_namespace: 'mm',
      parent_name: 'outside',
      parent_port: '9000',
    };
    const deny = { ...egress, route_kind: 'default', route_namespace: '', route_name: 'tcp-egress-deny' };
    const tls = { ...egress, parent_port: '443', route_kind: 'TLSRoute', route_namespace: 'mm', route_name: 'partner' };
    const rows = toStatOutboundRows(
      {
        tcpOpen: [sample(deny, 12)],
        tcpFailed: [sample(deny, 12)],
        tlsOpen: [sample(tls, 30)],
        tlsFailed: [sample(tls, 3)],
      },
      60,
    );
    expect(rows.map((r) => `${r.service} ${r.route} ${r.routeKind} ${r.unit} ${r.requests} ${r.successRate}`)).toEqual([
      'EgressNetwork/outside:443 partner TLSRoute connections 30 0.9',
      'EgressNetwork/outside:9000 tcp-egress-deny default connections 12 0',
    ]);
    const table = renderStatOutbound(rows);
    // RPS "-" and the connections per second in CONN/S.
    expect(table).toMatch(/EgressNetwork\/outside:443\s+partner\s+TLSRoute\s+90\.00%\s+-\s+0\.5rps\s/);
    const q = statOutboundQueries({ kind: 'deployment', namespace: 'mm', name: 'app', window: '1m' });
    expect(q.tlsOpen).toContain('outbound_tls_route_open_total{namespace="mm", deployment="app"}');
    expect(q.tcpFailed).toContain('outbound_tcp_route_close_total{namespace="mm", deployment="app", error!=""}');
  });

  it("backends' balancer endpoints: READY shows the ready ones of all (failure accrual's ejections are pending)", () => {
    const rows = toStatOutboundRows(
      {
        httpRoute: [sample({ http_status: '200' }, 60)],
        httpBackend: [sample({ ...backend('web'), http_status: '200' }, 60)],
        endpoints: [
          { metric: { ...backend('web'), endpoint_state: 'ready' }, value: 2 },
          { metric: { ...backend('web'), endpoint_state: 'pending' }, value: 1 },
          { metric: { ...backend('other'), endpoint_state: 'ready' }, value: 5 },
        ],
      },
      60,
    );
    expect(rows.map((r) => r.endpoints)).toEqual([undefined, { ready: 2, pending: 1 }]);
    const lines = renderStatOutbound(rows).trimEnd().split('\n');
    expect(lines[0]).toMatch(/RETRIES\s+READY$/);
    expect(lines[2]).toMatch(/└─►\s+web:80\s.*\s2\/3$/);
    expect(statOutboundQueries({ kind: 'deployment', namespace: 'shop', name: 'client', window: '1m' }).endpoints).toBe(
      'sum by (backend_namespace, backend_name, backend_port, endpoint_state) (outbound_http_balancer_endpoints{namespace="shop", deployment="client"})',
    );
  });
});
