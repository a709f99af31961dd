// HTTPLocalRateLimitPolicy: parsed (bad input refused with the field and what was expected), attached
// to its Server (the oldest wins), and the whole way to the proxy: index → the proxy API's
// HttpLocalRateLimit (over the wire) → the proxy's compiled rate limit.
import { inbound } from '@minimesh/proto';
import { describe, expect, it } from 'vitest';
import { compileServerPolicy } from '../client/server-policy.js';
import { PolicyIndex } from '../index/policy-index.js';
import { toProtoServer } from '../server/inbound-translator.js';
import { TEST_CLUSTER } from '../testing.js';
import { parseRateLimitPolicy } from './ratelimit-policy.js';

const G = 'policy.minimesh.io';
const policy = (name: string, spec: Record<string, unknown>, created = '2026-01-01T00:00:00Z') => ({
  apiVersion: `${G}/v1alpha1`,
  kind: 'HTTPLocalRateLimitPolicy',
  metadata: { name, namespace: 'shop', creationTimestamp: created },
  spec: { targetRef: { group: G, kind: 'Server', name: 'web-http' }, ...spec },
});

describe('parseRateLimitPolicy', () => {
  it('total, identity and overrides (ServiceAccounts; namespace defaults to the policy’s)', () => {
    const p = parseRateLimitPolicy(
      policy('web-limit', {
        total: { requestsPerSecond: 100 },
        identity: { requestsPerSecond: 20 },
        overrides: [
          {
            requestsPerSecond: 50,
            clientRefs: [
              { kind: 'ServiceAccount', name: 'batch' },
              { kind: 'ServiceAccount', name: 'ops', namespace: 'tools' },
            ],
          },
        ],
      }),
    );
    expect(p).toMatchObject({
      server: 'web-http',
      total: 100,
      identity: 20,
      overrides: [
        {
          requestsPerSecond: 50,
          clients: [
            { namespace: 'shop', name: 'batch' },
            { namespace: 'tools', name: 'ops' },
          ],
        },
      ],
    });
  });

  it.each([
    [
      'a limit of 0',
      { total: { requestsPerSecond: 0 } },
      /spec.total.requestsPerSecond: expected a whole number of requests per second, at least 1, got 0/,
    ],
    ['a fractional limit', { identity: { requestsPerSecond: 1.5 } }, /spec.identity.requestsPerSecond/],
    [
      'a target that is not a Server',
      { targetRef: { group: G, kind: 'HTTPRoute', name: 'x' }, total: { requestsPerSecond: 1 } },
      /spec.targetRef: expected a policy.minimesh.io Server/,
    ],
    [
      'an override client that is not a ServiceAccount',
      { overrides: [{ requestsPerSecond: 5, clientRefs: [{ kind: 'Namespace', name: 'x' }] }] },
      /clientRefs\[0\]: expected a ServiceAccount/,
    ],
    [
      'an override without clients',
      { overrides: [{ requestsPerSecond: 5, clientRefs: [] }] },
      /clientRefs: expected at least one ServiceAccount/,
    ],
    ['no limit at all', {}, /spec: expected at least one of total, identity or overrides/],
  ])('refuses %s', (_what, spec, message) => {
    expect(() => parseRateLimitPolicy(policy('bad', spec))).toThrow(message);
  });
});

describe('rate limits from the index to the proxy', () => {
  const objects = () => [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-1', namespace: 'shop', labels: { app: 'web' } },
      spec: { containers: [{ name: 'app', ports: [{ name: 'http', containerPort: 8080 }] }] },
    },
    {
      apiVersion: `${G}/v1beta3`,
      kind: 'Server',
      metadata: { name: 'web-http', namespace: 'shop', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http', proxyProtocol: 'HTTP/1' },
    },
  ];

  it('the Server’s oldest policy is sent as HttpLocalRateLimit, identities by name; the proxy compiles it', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    for (const o of objects()) index.apply(o.kind as 'Pod' | 'Server', o);
    index.apply(
      'HTTPLocalRateLimitPolicy',
      policy('newer', { total: { requestsPerSecond: 1 } }, '2026-02-01T00:00:00Z'),
    );
    index.apply(
      'HTTPLocalRateLimitPolicy',
      policy('web-limit', {
        identity: { requestsPerSecond: 50 },
        overrides: [{ requestsPerSecond: 100, clientRefs: [{ kind: 'ServiceAccount', name: 'batch' }] }],
      }),
    );
    const result = index.inbound('pod', 'shop', 'web-1', 8080)!;
    expect(result.ignored).toEqual([
      {
        kind: 'HTTPLocalRateLimitPolicy',
        namespace: 'shop',
        name: 'newer',
        reason: 'Server web-http already has the older HTTPLocalRateLimitPolicy web-limit',
      },
    ]);
    const p = toProtoServer(result.server, TEST_CLUSTER.networks);
    const wire = inbound.Server.decode(inbound.Server.encode(p).finish());
    const k = wire.protocol?.kind;
    expect(k?.$case).toBe('http1');
    const batch = 'batch.shop.serviceaccount.identity.minimesh.cluster.local';
    expect(k?.$case === 'http1' ? k.value.localRateLimit : undefined).toEqual({
      metadata: {
        kind: {
          $case: 'resource',
          value: { group: G, kind: 'HTTPLocalRateLimitPolicy', name: 'web-limit', namespace: '', section: '', port: 0 },
        },
      },
      identity: { requestsPerSecond: 50 },
      overrides: [{ limit: { requestsPerSecond: 100 }, clients: { identities: [{ name: batch }] } }],
    });
    const compiled = compileServerPolicy(wire).rateLimit;
    expect(compiled?.identity).toBe(50);
    expect(compiled?.total).toBeUndefined();
    expect(compiled?.overrides.get(batch)).toEqual({ requestsPerSecond: 100 });
    expect(compiled?.meta).toEqual({ group: G, kind: 'HTTPLocalRateLimitPolicy', name: 'web-limit' });
  });

  it('a detect port carries it too; deleting the policy takes it away', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    const [pod, server] = objects();
    index.apply('Pod', pod);
    index.apply('Server', { ...server!, spec: { ...server!.spec, proxyProtocol: 'unknown' } });
    index.apply('HTTPLocalRateLimitPolicy', policy('web-limit', { total: { requestsPerSecond: 7 } }));
    const updates: unknown[] = [];
    const sub = index.watchInbound('pod', 'shop', 'web-1', 8080, { update: (v) => updates.push(v), end: () => {} })!;
    const k = toProtoServer(sub.current, TEST_CLUSTER.networks).protocol?.kind;
    expect(k?.$case === 'detect' ? k.value.httpLocalRateLimit?.total : undefined).toEqual({ requestsPerSecond: 7 });
    index.delete('HTTPLocalRateLimitPolicy', 'shop', 'web-limit');
    expect(updates).toHaveLength(1);
    expect((updates[0] as { rateLimit?: unknown }).rateLimit).toBeUndefined();
  });
});
