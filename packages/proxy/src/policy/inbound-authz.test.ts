// The authorization layer's verdicts and Linkerd's authz metrics, over real compiled policies.
import { parsePortRanges } from '@minimesh/config';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AuthzMetrics } from './authz-metrics.js';
import { applyRequestFilters, createInboundAuthz, type AuthzConn } from './inbound-authz.js';
import { InboundPolicies, type DefaultPolicyName } from './inbound-policies.js';

const logger = createLogger({ name: 'test', level: 'silent', format: 'json' });

function layer(defaultPolicy: DefaultPolicyName) {
  const registry = new Registry();
  const metrics = new AuthzMetrics(registry);
  const policies = new InboundPolicies({
    client: undefined,
    workload: '{"ns":"shop","pod":"web-1"}',
    defaultPolicy,
    clusterNetworks: ['10.0.0.0/8'],
    detectTimeoutMs: 10_000,
    opaquePorts: parsePortRanges('t', '5432'),
    ports: [],
    idleMs: 60_000,
    logger,
  });
  return { authz: createInboundAuthz({ policies, metrics, logger }), registry, close: () => policies.close() };
}

const conn = (over: Partial<AuthzConn> = {}): AuthzConn => ({
  targetAddr: '10.0.0.9:8080',
  targetIp: '10.0.0.9',
  targetPort: 8080,
  tls: 'true',
  clientId: 'client.shop.serviceaccount.identity.minimesh.cluster.local',
  clientIp: '10.0.0.5',
  ...over,
});
const req = { method: 'GET', path: '/', authority: 'web:8080', header: () => undefined };

describe('inbound authorization layer', () => {
  // Empty label values (the group of a default) are left out, which Prometheus treats as the same series.
  it('cluster-authenticated: admits meshed in-cluster clients, 403s the rest, with Linkerd labels', async () => {
    const l = layer('cluster-authenticated');
    expect(l.authz.checkRequest(conn(), req)).toEqual({ kind: 'allow', filters: [] });
    expect(l.authz.checkRequest(conn({ tls: 'no_identity', clientId: undefined }), req)).toMatchObject({
      kind: 'respond',
      status: 403,
      grpcStatus: 7,
    });
    expect(l.authz.checkRequest(conn({ clientIp: '192.0.2.1' }), req)).toMatchObject({ status: 403 });
    expect(l.authz.admitConnection(conn({ targetPort: 5432, targetAddr: '10.0.0.9:5432' }))).toBe(true);
    expect(
      l.authz.admitConnection(
        conn({ targetPort: 5432, targetAddr: '10.0.0.9:5432', tls: 'no_identity', clientId: undefined }),
      ),
    ).toBe(false);
    const text = await l.registry.metrics();
    expect(text).toContain(
      'inbound_http_authz_allow_total{target_addr="10.0.0.9:8080",target_ip="10.0.0.9",target_port="8080",srv_kind="default",srv_name="cluster-authenticated",srv_port="8080",route_kind="default",route_name="default",authz_kind="default",authz_name="cluster-authenticated",tls="true",client_id="client.shop.serviceaccount.identity.minimesh.cluster.local"} 1',
    );
    expect(text).toContain(
      'inbound_http_authz_deny_total{target_addr="10.0.0.9:8080",target_ip="10.0.0.9",target_port="8080",srv_kind="default",srv_name="cluster-authenticated",srv_port="8080",route_kind="default",route_name="default",tls="no_identity"} 1',
    );
    expect(text).toMatch(
      /inbound_tcp_authz_allow_total\{[^}]*target_port="5432"[^}]*authz_name="cluster-authenticated"[^}]*\} 1/,
    );
    expect(text).toMatch(/inbound_tcp_authz_deny_total\{[^}]*target_port="5432"[^}]*tls="no_identity"\} 1/);
    l.close();
  });

  it('deny: every connection is closed, localhost excepted', () => {
    const l = layer('deny');
    expect(l.authz.admitConnection(conn())).toBe(false);
    expect(l.authz.admitConnection(conn({ clientIp: '127.0.0.1' }))).toBe(true);
    l.close();
  });

  it('route filters: headers edited in place, redirects and failures answered', () => {
    const headers: Record<string, string | string[] | undefined> = { 'x-a': '1', 'x-gone': 'x' };
    expect(
      applyRequestFilters([{ kind: 'requestHeaders', add: [['x-a', '2']], set: [['x-b', 'b']], remove: ['x-gone'] }], {
        authority: 'web',
        path: '/',
        headers,
      }),
    ).toBeUndefined();
    expect(headers).toEqual({ 'x-a': ['1', '2'], 'x-b': 'b' });
    expect(
      applyRequestFilters(
        [
          {
            kind: 'redirect',
            redirect: {
              $case: 'redirect',
              value: { host: 'new.example', port: 0, status: 302, path: { replace: { $case: 'full', value: '/n' } } },
            },
          },
        ],
        { authority: 'web:8080', path: '/old', headers: {} },
      ),
    ).toMatchObject({ kind: 'respond', status: 302, location: 'http://new.example/n' });
    expect(
      applyRequestFilters([{ kind: 'fail', status: 503, message: 'no', ratio: 1 }], {
        authority: 'w',
        path: '/',
        headers: {},
      }),
    ).toMatchObject({
      status: 503,
    });
  });
});
