// The gRPC handlers over real gRPC on loopback, fed by an in-memory index (no Kubernetes).
import { credentials, Server, ServerCredentials, status, type ServiceError } from '@grpc/grpc-js';
import { parsePortRanges } from '@minimesh/config';
import { destination, fromTcpAddress } from '@minimesh/proto';
import { createLogger, createRegistry } from '@minimesh/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointIndex } from '../index/endpoint-index.js';
import { toServiceRecord, toSliceRecord } from '../k8s/records.js';
import { createDestinationMetrics } from '../metrics.js';
import { createDestinationHandlers, destinationServiceDefinition } from './destination-server.js';

const index = new EndpointIndex();
const metrics = createDestinationMetrics(createRegistry());
let server: Server;
let client: destination.DestinationClient;

const slice = (n: number) =>
  toSliceRecord({
    metadata: { name: 'web-a', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080 }],
    endpoints: [{ addresses: [`10.1.${(n >> 8) & 255}.${n & 255}`] }],
  });

beforeAll(async () => {
  index.apply(
    'service',
    toServiceRecord({
      metadata: { name: 'web', namespace: 'shop' },
      spec: { clusterIP: '10.96.0.10', ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    }),
  );
  index.apply(
    'service',
    toServiceRecord({
      metadata: { name: 'ext', namespace: 'shop' },
      spec: { type: 'ExternalName', externalName: 'db.example.com' },
    }),
  );
  index.apply('endpointslice', slice(0));
  server = new Server();
  server.addService(
    destinationServiceDefinition,
    createDestinationHandlers({
      index,
      metrics,
      logger: createLogger({ name: 'test', level: 'silent' }),
      streamQueueCapacity: 4,
      translator: {
        controllerNamespace: 'minimesh',
        identityTrustDomain: 'cluster.local',
        clusterDomain: 'cluster.local',
        defaultOpaquePorts: parsePortRanges('t', ''),
        enableH2Upgrade: true,
      },
    }),
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  client = new destination.DestinationClient(`127.0.0.1:${port}`, credentials.createInsecure());
});

afterAll(() => {
  client.close();
  server.forceShutdown();
});

const statusOf = (path: string) =>
  new Promise<ServiceError>((resolve) => {
    const call = client.get({ scheme: '', path, contextToken: '' });
    call.on('data', () => undefined);
    call.on('error', resolve);
  });

describe('Destination gRPC handlers', () => {
  it.each([
    ['10.96.0.10:80', 'IP queries are not supported by Get'],
    ['web.shop.svc.cluster.local:99999', 'port "99999"'],
    ['web.shop:80', 'not a name in the cluster domain'],
    ['ext.shop.svc.cluster.local:80', 'ExternalName'],
  ])('Get %s → InvalidArgument (%s)', async (path, text) => {
    const err = await statusOf(path);
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toContain(text);
  });

  it('the first message arrives at once and a change follows as a diff', async () => {
    const call = client.get({ scheme: '', path: 'web.shop.svc.cluster.local', contextToken: '{"ns":"shop"}' });
    const got: destination.Update[] = [];
    call.on('error', () => undefined); // CANCELLED when the test cancels
    call.on('data', (u: destination.Update) => got.push(u));
    await new Promise((r) => call.once('data', r));
    index.apply('endpointslice', slice(1));
    const deadline = Date.now() + 5000;
    while (got.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(got.map((u) => u.update?.$case)).toEqual(['add', 'add', 'remove']);
    const first = got[0]?.update;
    expect(first?.$case === 'add' && fromTcpAddress(first.value.addrs[0]?.addr)).toEqual({
      ip: '10.1.0.0',
      port: 8080,
    });
    call.cancel();
    // The cancel reaches the server as an RST_STREAM over loopback: wait for it (bounded) rather than
    // a fixed 100 ms, which races it when the machine is loaded; the subscription must then be gone.
    const released = Date.now() + 5000;
    while (index.listenerCount() > 0 && Date.now() < released) await new Promise((r) => setTimeout(r, 10));
    expect(index.listenerCount()).toBe(0);
  });

  it('a client that stops reading is cut off with ResourceExhausted once its queue overflows, and counted', async () => {
    const call = client.get({ scheme: '', path: 'web.shop.svc.cluster.local:80', contextToken: '' });
    let error: ServiceError | undefined;
    call.on('error', (e: ServiceError) => (error = e));
    await new Promise((r) => call.once('data', r));
    call.pause(); // stop reading: HTTP/2 flow control fills, then grpc-js's buffer, then our queue
    for (let n = 2; n < 20_000 && index.listenerCount() > 0; n++) {
      index.apply('endpointslice', slice(n));
      if (n % 500 === 0) await new Promise((r) => setTimeout(r, 5));
    }
    expect(index.listenerCount()).toBe(0);
    const overflow = await metrics.queueOverflows.get();
    expect(overflow.values.find((v) => v.labels.service === 'shop/web')?.value).toBe(1);
    call.resume();
    const deadline = Date.now() + 10_000;
    while (!error && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(error?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(error?.details).toContain('more than 4 updates queued');
  });

  it('GetProfile answers by ClusterIP with the Service name', async () => {
    const call = client.getProfile({ scheme: '', path: '10.96.0.10:80', contextToken: '' });
    call.on('error', () => undefined); // CANCELLED when the test cancels
    const p = await new Promise<destination.DestinationProfile>((r) => call.once('data', r));
    expect(p.fullyQualifiedName).toBe('web.shop.svc.cluster.local');
    call.cancel();
  });
});
