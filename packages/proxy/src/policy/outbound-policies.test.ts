// The proxy's outbound policies against minimesh's real OutboundPolicies service on loopback.
import { EventEmitter } from 'node:events';
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

describe('egress: addresses outside the cluster networks', () => {
  const withNetworks = (c: () => outbound.OutboundPoliciesClient) =>
    new OutboundPolicies({
      client: c,
      workload: '{"ns":"shop","pod":"c"}',
      idleMs: 60_000,
      logger,
      backoff: { minMs: 20, maxMs: 100 },
      clusterNetworks: ['10.0.0.0/8', 'fd00::/8'],
    });

  it('isEgress: outside the cluster networks only, and never without cluster networks or a controller', () => {
    const p = withNetworks(() => client);
    expect([
      p.isEgress('203.0.113.9'),
      p.isEgress('10.1.2.3'),
      p.isEgress('fd00::1'),
      p.isEgress('2001:db8::1'),
    ]).toEqual([true, false, false, true]);
    expect(policies.isEgress('203.0.113.9')).toBe(false);
    const none = new OutboundPolicies({
      client: undefined,
      workload: '',
      idleMs: 1000,
      logger,
      clusterNetworks: ['10.0.0.0/8'],
    });
    expect(none.isEgress('203.0.113.9')).toBe(false);
    expect(none.whenAnswered({ kind: 'addr', ip: '203.0.113.9', port: 80 }, 100)).toBeUndefined();
    p.close();
    none.close();
  });

  it('whenAnswered waits for the first answer: a Deny EgressNetwork, its opaque route forbidding', async () => {
    index.apply('EgressNetwork', {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'EgressNetwork',
      metadata: { name: 'partner', namespace: 'minimesh' },
      spec: { trafficPolicy: 'Deny', networks: [{ cidr: '203.0.113.0/24' }] },
    });
    const p = withNetworks(() => client);
    const target = { kind: 'addr', ip: '203.0.113.9', port: 80 } as const;
    const first = p.whenAnswered(target, 5000);
    expect(first).toBeInstanceOf(Promise);
    const policy = await first;
    expect(policy?.meta).toEqual({ group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'partner' });
    expect(policy?.opaque?.refused?.error).toBe('forbidden');
    // Answered: at once from now on, no promise.
    expect(p.whenAnswered(target, 5000)).toBe(policy);
    index.delete('EgressNetwork', 'minimesh', 'partner');
    await until('the fallback', () => (p.get(target)?.meta.name === 'egress-fallback' ? true : undefined));
    p.close();
  });

  it('a controller that does not answer in time: undefined after the wait (traffic goes as before)', async () => {
    const silent = {
      watch: () => {
        const s = new EventEmitter() as EventEmitter & { cancel(): void };
        s.cancel = () => undefined;
        return s;
      },
    } as unknown as outbound.OutboundPoliciesClient;
    const p = withNetworks(() => silent);
    const t0 = Date.now();
    expect(await p.whenAnswered({ kind: 'addr', ip: '203.0.113.9', port: 80 }, 150)).toBeUndefined();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    p.close();
  });
});
