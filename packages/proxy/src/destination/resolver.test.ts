import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentials } from '@grpc/grpc-js';
import { destination } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { createTestPki } from '../../test/support/pki.js';
import { startFakeControlPlane, type FakeControlPlane } from '../../test/support/fake-control-plane.js';
import { DestinationResolver, type ResolverOptions } from './resolver.js';

const logger = createLogger({ name: 'test', level: 'silent' });
let cp: FakeControlPlane;
let client: destination.DestinationClient;

beforeAll(async () => {
  cp = await startFakeControlPlane(await createTestPki());
  client = new destination.DestinationClient(cp.addr, credentials.createInsecure());
});
afterAll(async () => {
  client.close();
  await cp.close();
});

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A resolver on the shared fake control plane, with short timings; overrides for the odd case. */
function resolver(overrides: Partial<ResolverOptions> = {}) {
  return new DestinationResolver({
    client: () => client,
    contextToken: '{"ns":"default"}',
    idleMs: 5000,
    firstUpdateTimeoutMs: 1000,
    logger,
    backoff: { minMs: 20, maxMs: 100 },
    ...overrides,
  });
}

describe('DestinationResolver', () => {
  it('shares one Get stream between lookups and carries identity, hint and labels', async () => {
    cp.destination.set('a.default.svc.cluster.local:80', [
      {
        ip: '10.0.0.1',
        port: 8080,
        identity: 'a.default.serviceaccount.identity.minimesh.cluster.local',
        labels: { pod: 'a-0' },
      },
    ]);
    const r = resolver();
    const before = cp.destination.getCalls.length;
    const [s1, s2] = await Promise.all([
      r.resolve('a.default.svc.cluster.local:80'),
      r.resolve('a.default.svc.cluster.local:80'),
    ]);
    await r.resolve('a.default.svc.cluster.local:80');
    expect(s1).toBe(s2);
    expect(cp.destination.getCalls.length - before).toBe(1);
    expect(s1.state).toBe('ready');
    expect(s1.list).toHaveLength(1);
    expect(s1.list[0]).toMatchObject({
      ip: '10.0.0.1',
      port: 8080,
      identity: 'a.default.serviceaccount.identity.minimesh.cluster.local',
      hint: 'h2',
      labels: { namespace: 'default', pod: 'a-0' },
    });
    r.close();
  });

  it("applies adds and removes as they stream in, keeping each endpoint's load estimate", async () => {
    cp.destination.set('b.default.svc.cluster.local:80', [{ ip: '10.0.0.1', port: 80 }]);
    const r = resolver();
    const set = await r.resolve('b.default.svc.cluster.local:80');
    const load = set.list[0]!.load;
    cp.destination.set('b.default.svc.cluster.local:80', [
      { ip: '10.0.0.1', port: 80 },
      { ip: '10.0.0.2', port: 80 },
    ]);
    await wait(100);
    expect(set.list.map((e) => e.key).sort()).toEqual(['10.0.0.1:80', '10.0.0.2:80']);
    expect(set.byKey.get('10.0.0.1:80')!.load).toBe(load);
    cp.destination.set('b.default.svc.cluster.local:80', [{ ip: '10.0.0.2', port: 80 }]);
    await wait(100);
    expect(set.list.map((e) => e.key)).toEqual(['10.0.0.2:80']);
    r.close();
  });

  it('an unknown service is "missing" (the caller falls back to the original destination)', async () => {
    const r = resolver();
    const set = await r.resolve('nope.default.svc.cluster.local:80');
    expect(set.state).toBe('missing');
    expect(set.list).toHaveLength(0);
    r.close();
  });

  it('drops a stream nobody used for the idle timeout', async () => {
    cp.destination.set('c.default.svc.cluster.local:80', [{ ip: '10.0.0.3', port: 80 }]);
    const r = resolver({ idleMs: 300 });
    await r.resolve('c.default.svc.cluster.local:80');
    expect(r.streams.get).toBe(1);
    const active = cp.destination.activeStreams;
    await wait(900);
    expect(r.streams.get).toBe(0);
    await wait(100);
    expect(cp.destination.activeStreams).toBe(active - 1);
    r.close();
  });

  it('GetProfile by IP:port gives the fully qualified name or the endpoint', async () => {
    cp.destination.profiles.set('10.96.0.1:80', { fullyQualifiedName: 'a.default.svc.cluster.local.' });
    cp.destination.profiles.set('10.1.0.9:8080', {
      endpoint: { ip: '10.1.0.9', port: 8080, identity: 'p.default.serviceaccount.identity.minimesh.cluster.local' },
    });
    const r = resolver();
    expect((await r.profile('10.96.0.1', 80))?.fullyQualifiedName).toBe('a.default.svc.cluster.local');
    expect((await r.profile('10.1.0.9', 8080))?.endpoint).toMatchObject({
      ip: '10.1.0.9',
      identity: 'p.default.serviceaccount.identity.minimesh.cluster.local',
    });
    r.close();
  });

  it('keeps the last known endpoints while destination is down, and resyncs when it returns, keeping their loads', async () => {
    const { startFakeControlPlane: start } = await import('../../test/support/fake-control-plane.js');
    const pki = await createTestPki();
    const cp2 = await start(pki);
    const port = cp2.addr.split(':')[1];
    cp2.destination.set('d.default.svc.cluster.local:80', [
      { ip: '10.0.0.4', port: 80 },
      { ip: '10.0.0.5', port: 80 },
    ]);
    const c2 = new destination.DestinationClient(cp2.addr, credentials.createInsecure(), {
      'grpc.initial_reconnect_backoff_ms': 50,
      'grpc.max_reconnect_backoff_ms': 100,
    });
    const r = resolver({ client: () => c2, contextToken: '', idleMs: 60_000 });
    const set = await r.resolve('d.default.svc.cluster.local:80');
    expect(set.list).toHaveLength(2);
    // Its connection broke (endpoint health marked its load): the resync must not make it ready again.
    const load = set.byKey.get('10.0.0.5:80')!.load!;
    load.ready = false;
    cp2.server.forceShutdown();
    await wait(300);
    expect(set.list).toHaveLength(2);
    const cp3 = await start(pki, { bind: `127.0.0.1:${port}` });
    cp3.destination.set('d.default.svc.cluster.local:80', [{ ip: '10.0.0.5', port: 80 }]);
    for (let i = 0; i < 50 && set.list.length !== 1; i++) await wait(100);
    expect(set.list.map((e) => e.key)).toEqual(['10.0.0.5:80']);
    expect(set.list[0]!.load).toBe(load);
    expect(set.list[0]!.load!.ready).toBe(false);
    r.close();
    c2.close();
    await cp3.close();
  });
});

describe('DestinationResolver against a destination that refuses every stream', () => {
  it('retries one stream at a time (an error and an end of the same call are one failure)', async () => {
    const { Server, ServerCredentials, status } = await import('@grpc/grpc-js');
    let gets = 0;
    const server = new Server();
    server.addService(destination.DestinationService, {
      get: (call: { emit(ev: string, err: unknown): void }) => {
        gets++;
        call.emit('error', { code: status.RESOURCE_EXHAUSTED, details: 'this client already has 1000 open streams' });
      },
      getProfile: (call: { emit(ev: string, err: unknown): void }) => {
        call.emit('error', { code: status.RESOURCE_EXHAUSTED, details: 'no' });
      },
    } as never);
    const port = await new Promise<number>((res, rej) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? rej(err) : res(p))),
    );
    const c = new destination.DestinationClient(`127.0.0.1:${port}`, credentials.createInsecure());
    const r = resolver({ client: () => c, idleMs: 60_000, firstUpdateTimeoutMs: 200 });
    await r.resolve('web.default.svc.cluster.local:80');
    await wait(1500);
    r.close();
    c.close();
    server.forceShutdown();
    // One chain of retries, 20 ms doubling to 100 ms (jitter ±50 %): well under 60 in 1.7 s. Two
    // retries per failure would double the streams at each round (the proxy OOM-killed in the faults spec).
    expect(gets).toBeGreaterThan(3);
    expect(gets).toBeLessThan(60);
  });
});
