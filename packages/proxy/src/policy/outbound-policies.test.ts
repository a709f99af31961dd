// The proxy's outbound policies against minimesh's real OutboundPolicies service on loopback.
import { credentials, makeGenericClientConstructor, Server, ServerCredentials } from '@grpc/grpc-js';
import { createOutboundHandlers, createPolicyMetrics, PolicyIndex, TEST_CLUSTER } from '@minimesh/policy';
import { requestView, routeOutbound } from '@minimesh/policy/client';
import { outbound } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundPolicies } from './outbound-policies.js';

const logger = createLogger({ name: 'test', level: 'silent', format: 'json' });
const index = new PolicyIndex(TEST_CLUSTER);
let server: Server;
let client: outbound.OutboundPoliciesClient & { close(): void };
let policies: OutboundPolicies;

beforeAll(async () => {
  index.apply('Service', {
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { clusterIP: '10.96.0.10', ports: [{ port: 80 }] },
  });
  server = new Server();
  server.addService(
    outbound.OutboundPoliciesService,
    createOutboundHandlers({ index, logger, metrics: createPolicyMetrics(new Registry()) }),
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  const C = makeGenericClientConstructor(outbound.OutboundPoliciesService, 'OutboundPolicies');
  client = new C(`127.0.0.1:${port}`, credentials.createInsecure()) as never;
  policies = new OutboundPolicies({
    client: () => client,
    workload: '{"ns":"shop","pod":"c"}',
    idleMs: 60_000,
    logger,
    backoff: { minMs: 20, maxMs: 100 },
  });
});
afterAll(() => {
  policies?.close();
  client?.close();
  server?.forceShutdown();
});

async function until<T>(what: string, fn: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const req = (path: string) => requestView('GET', path, 'web.shop.svc.cluster.local', () => undefined);

describe('outbound policies', () => {
  it('by authority and by ClusterIP; HTTPRoute timeouts follow; non-Services have none', async () => {
    const byName = { kind: 'authority', authority: 'web.shop.svc.cluster.local:80' } as const;
    const byIp = { kind: 'addr', ip: '10.96.0.10', port: 80 } as const;
    expect(policies.get(byName)).toBeUndefined();
    const p = await until('the policy', () => policies.get(byName));
    expect(routeOutbound(p, 'http1', req('/x'))?.rule.timeouts).toEqual({});
    await until('the policy by IP', () => policies.get(byIp));
    index.apply('HTTPRoute', {
      kind: 'HTTPRoute',
      metadata: { name: 'slow', namespace: 'shop' },
      spec: {
        parentRefs: [{ group: 'core', kind: 'Service', name: 'web', port: 80 }],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/slow' } }], timeouts: { request: '750ms' } }],
      },
    });
    await until('the route', () =>
      routeOutbound(policies.get(byName)!, 'http1', req('/slow/1'))?.rule.timeouts.requestMs === 750 ? true : undefined,
    );
    expect(routeOutbound(policies.get(byIp)!, 'h2', req('/slow'))?.route.meta.name).toBe('slow');
    const other = { kind: 'addr', ip: '10.1.2.3', port: 80 } as const;
    policies.get(other);
    await new Promise((r) => setTimeout(r, 200));
    expect(policies.get(other)).toBeUndefined();
  });
});
