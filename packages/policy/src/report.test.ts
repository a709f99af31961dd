// The `minimesh authz` report: each port's Server or default policy, routes and who they admit.
import { describe, expect, it } from 'vitest';
import { PolicyIndex } from './index/policy-index.js';
import { authzReport, formatAuthzReport } from './report.js';
import { TEST_CLUSTER } from './testing.js';

const pod = (name: string, labels: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels, annotations: { 'config.minimesh.io/default-inbound-policy': 'deny' } },
  spec: {
    containers: [
      {
        name: 'app',
        ports: [
          { name: 'http', containerPort: 8080 },
          { name: 'db', containerPort: 5432 },
        ],
        readinessProbe: { httpGet: { path: '/healthz', port: 'http' } },
      },
    ],
  },
});

describe('authz report', () => {
  it('lists every port of the pods, groups identical pods, and says who each route admits', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    for (const o of [
      pod('web-1', { app: 'web' }),
      pod('web-2', { app: 'web' }),
      {
        apiVersion: 'policy.minimesh.io/v1beta3',
        kind: 'Server',
        metadata: { name: 'web-http', namespace: 'shop', creationTimestamp: '2026-01-01T00:00:00Z' },
        spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http', proxyProtocol: 'HTTP/1' },
      },
      {
        apiVersion: 'policy.minimesh.io/v1beta3',
        kind: 'Server',
        metadata: { name: 'web-again', namespace: 'shop', creationTimestamp: '2026-02-01T00:00:00Z' },
        spec: { podSelector: { matchLabels: { app: 'web' } }, port: 8080 },
      },
      {
        apiVersion: 'policy.minimesh.io/v1alpha1',
        kind: 'AuthorizationPolicy',
        metadata: { name: 'client-only', namespace: 'shop' },
        spec: {
          targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' },
          requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
        },
      },
    ])
      index.apply((o as { kind: 'Pod' }).kind, o);
    const reports = authzReport(index, 'shop', ['web-1', 'web-2']);
    expect(reports).toHaveLength(1);
    expect(formatAuthzReport(reports, ['Server shop/x: spec: expected ...'])).toBe(
      [
        'shop: pods web-1, web-2',
        '  port 5432: default policy deny, opaque',
        '    connections are admitted for:',
        '      nobody (closed)',
        '  port 8080: Server web-http, HTTP/1',
        '    default route default: /*',
        '      admits AuthorizationPolicy client-only: mesh TLS as client.shop.serviceaccount.identity.minimesh.cluster.local from 0.0.0.0/0,::/0',
        '    default route probe: GET /healthz',
        '      admits default probe: any client from 0.0.0.0/0',
        '      admits AuthorizationPolicy client-only: mesh TLS as client.shop.serviceaccount.identity.minimesh.cluster.local from 0.0.0.0/0,::/0',
        '    note: Server web-again also selects this port and is ignored for it (the oldest Server wins)',
        'resources that cannot be used (malformed):',
        '  Server shop/x: spec: expected ...',
        '',
      ].join('\n'),
    );
  });

  it('reports pods with different answers separately', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Pod', pod('a', { app: 'a' }));
    index.apply('Pod', { ...pod('b', { app: 'b' }), metadata: { name: 'b', namespace: 'shop', labels: { app: 'b' } } });
    const reports = authzReport(index, 'shop', ['a', 'b']);
    expect(reports.map((r) => [r.pods, r.ports.find((p) => p.port === 8080)?.server])).toEqual([
      [['a'], 'default policy deny'],
      [['b'], 'default policy all-unauthenticated'],
    ]);
  });

  it("shows a Server's HTTP rate limit", () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Pod', pod('web-1', { app: 'web' }));
    index.apply('Server', {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'Server',
      metadata: { name: 'web-http', namespace: 'shop', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http', proxyProtocol: 'HTTP/1' },
    });
    index.apply('HTTPLocalRateLimitPolicy', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'HTTPLocalRateLimitPolicy',
      metadata: { name: 'web-limit', namespace: 'shop' },
      spec: {
        targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' },
        total: { requestsPerSecond: 100 },
        identity: { requestsPerSecond: 20 },
        overrides: [{ requestsPerSecond: 50, clientRefs: [{ kind: 'ServiceAccount', name: 'batch' }] }],
      },
    });
    const text = formatAuthzReport(authzReport(index, 'shop', ['web-1']));
    expect(text).toContain(
      '  port 8080: Server web-http, HTTP/1\n    rate limit: HTTPLocalRateLimitPolicy web-limit: total 100 rps; ' +
        '20 rps per identity; 50 rps for batch.shop.serviceaccount.identity.minimesh.cluster.local (over it: 429)\n',
    );
    // Not on a port it does not govern.
    expect(text).not.toMatch(/port 5432[^\n]*\n {4}rate limit/);
  });
});
