// The proxy's inbound policies against minimesh's real policy gRPC services on loopback: the
// configured default until the controller answers (also when it is down or does not speak the API),
// then the controller's policy and its updates, kept while the controller is unreachable.
import { credentials, makeGenericClientConstructor, Server, ServerCredentials } from '@grpc/grpc-js';
import { createInboundHandlers, createPolicyMetrics, PolicyIndex, TEST_CLUSTER } from '@minimesh/policy';
import { authorizeConnection, authorizeRequest, requestView } from '@minimesh/policy/client';
import { inbound } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { parsePortRanges } from '@minimesh/config';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { InboundPolicies, type InboundPoliciesOptions } from './inbound-policies.js';

const logger = createLogger({ name: 'test', level: 'silent', format: 'json' });
const WORKLOAD = JSON.stringify({ ns: 'shop', pod: 'web-1' });
const CLIENT_ID = 'client.shop.serviceaccount.identity.minimesh.cluster.local';
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

const POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web-1', namespace: 'shop', labels: { app: 'web' } },
  spec: { containers: [{ name: 'app', ports: [{ name: 'http', containerPort: 8080 }] }] },
};
const SERVER = {
  apiVersion: 'policy.minimesh.io/v1beta3',
  kind: 'Server',
  metadata: { name: 'web-http', namespace: 'shop' },
  spec: { podSelector: { matchLabels: { app: 'web' } }, port: 8080 },
};
const CLIENT_ONLY = {
  apiVersion: 'policy.minimesh.io/v1alpha1',
  kind: 'AuthorizationPolicy',
  metadata: { name: 'client-only', namespace: 'shop' },
  spec: {
    targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' },
    requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
  },
};

async function controller(index: PolicyIndex, port = 0, withService = true): Promise<{ port: number; stop(): void }> {
  const server = new Server();
  if (withService)
    server.addService(
      inbound.InboundServerPoliciesService,
      createInboundHandlers({ index, logger, metrics: createPolicyMetrics(new Registry()) }),
    );
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const stop = () => server.forceShutdown();
  cleanups.push(stop);
  return { port: bound, stop };
}

function policies(port: number | undefined, extra: Partial<InboundPoliciesOptions> = {}): InboundPolicies {
  const Client = makeGenericClientConstructor(inbound.InboundServerPoliciesService, 'InboundServerPolicies');
  const client =
    port === undefined
      ? undefined
      : (new Client(
          `127.0.0.1:${port}`,
          credentials.createInsecure(),
        ) as unknown as inbound.InboundServerPoliciesClient);
  const p = new InboundPolicies({
    client: client ? () => client : undefined,
    workload: WORKLOAD,
    defaultPolicy: 'all-unauthenticated',
    clusterNetworks: TEST_CLUSTER.networks,
    detectTimeoutMs: 10_000,
    opaquePorts: parsePortRanges('t', '5432'),
    ports: [8080],
    idleMs: 90_000,
    logger,
    backoff: { minMs: 20, maxMs: 100 },
    ...extra,
  });
  cleanups.push(() => {
    p.close();
    client?.close();
  });
  return p;
}

async function until(what: string, fn: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const meshedClient = { ip: '10.0.0.5', tls: true, identity: CLIENT_ID };
const otherClient = {
  ip: '10.0.0.6',
  tls: true,
  identity: 'other.shop.serviceaccount.identity.minimesh.cluster.local',
};

describe('inbound policies', () => {
  it('without a controller: the default policy for every port (deny closes connections, opaque ports stay opaque)', () => {
    const p = policies(undefined, { defaultPolicy: 'deny' });
    expect(p.get(8080).meta).toEqual({ group: '', kind: 'default', name: 'deny' });
    expect(authorizeConnection(p.get(8080), meshedClient)).toBeUndefined();
    const open = policies(undefined);
    expect(open.get(5432).protocol).toBe('opaque');
    expect(open.get(9999).protocol).toBe('detect');
    expect(open.discovered(8080)).toBe(false);
  });

  it('a controller that is down at start: the default until it comes up, then its policy', async () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Pod', POD);
    index.apply('Server', SERVER);
    index.apply('AuthorizationPolicy', CLIENT_ONLY);
    // Reserve a port, then free it: nothing listens there yet.
    const probe = await controller(index);
    probe.stop();
    const p = policies(probe.port, { defaultPolicy: 'cluster-authenticated' });
    await new Promise((r) => setTimeout(r, 150));
    expect(p.get(8080).meta.name).toBe('cluster-authenticated');
    expect(p.discovered(8080)).toBe(false);
    // Not more open than the default meanwhile: an unmeshed client is refused.
    expect(authorizeConnection(p.get(8080), { ip: '10.0.0.7', tls: false })).toBeUndefined();
    await controller(index, probe.port);
    await until('the controller policy', () => p.discovered(8080));
    expect(p.get(8080).meta).toEqual({ group: 'policy.minimesh.io', kind: 'server', name: 'web-http' });
    expect(
      authorizeRequest(
        p.get(8080),
        meshedClient,
        requestView('GET', '/', 'web', () => undefined),
      ).kind,
    ).toBe('allow');
    expect(
      authorizeRequest(
        p.get(8080),
        otherClient,
        requestView('GET', '/', 'web', () => undefined),
      ).kind,
    ).toBe('deny');
  });

  it('a server that answers UNIMPLEMENTED (no policy API): the default stays', async () => {
    const ctl = await controller(new PolicyIndex(TEST_CLUSTER), 0, false);
    const p = policies(ctl.port, { defaultPolicy: 'all-authenticated' });
    await new Promise((r) => setTimeout(r, 200));
    expect(p.discovered(8080)).toBe(false);
    expect(p.get(8080).meta.name).toBe('all-authenticated');
  });

  it('an unknown pod (NotFound) keeps the default until the controller learns the pod; updates follow', async () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    const ctl = await controller(index);
    const updates: string[] = [];
    const p = policies(ctl.port, {
      onUpdate: (port, pol) => updates.push(`${port} ${pol.meta.kind}/${pol.meta.name}`),
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(p.discovered(8080)).toBe(false);
    index.apply('Pod', POD);
    await until('the pod policy', () => p.discovered(8080));
    expect(p.get(8080).meta.name).toBe('all-unauthenticated');
    index.apply('Server', SERVER);
    await until('the Server', () => p.get(8080).meta.name === 'web-http');
    expect(authorizeConnection(p.get(8080), meshedClient)).toBeUndefined();
    index.apply('AuthorizationPolicy', CLIENT_ONLY);
    await until('the policy', () => authorizeConnection(p.get(8080), meshedClient) !== undefined);
    expect(updates).toEqual(['8080 default/all-unauthenticated', '8080 server/web-http', '8080 server/web-http']);
    // A port first seen later is watched on demand.
    expect(p.get(9000).meta.name).toBe('all-unauthenticated');
    await until('port 9000', () => p.discovered(9000));
  });

  it('keeps the last policy while the controller is unreachable', async () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Pod', POD);
    index.apply('Server', SERVER);
    const ctl = await controller(index);
    const p = policies(ctl.port);
    await until('the Server', () => p.get(8080).meta.name === 'web-http');
    ctl.stop();
    await new Promise((r) => setTimeout(r, 300));
    expect(p.get(8080).meta.name).toBe('web-http');
  });
});
