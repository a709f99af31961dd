// Issue 17: what a hostile or broken client can send to destination. Over real gRPC on loopback with
// an in-memory index: huge and malformed authorities and ports are refused with INVALID_ARGUMENT and a
// short message; a context token that is not JSON is ignored; 10,000 concurrent streams from one
// client hit the per-client limit (RESOURCE_EXHAUSTED) with bounded memory, and the slots come back
// when streams close. Properties (fast-check) for the authority and context-token parsers.
import { credentials, Server, ServerCredentials, status, type ClientReadableStream } from '@grpc/grpc-js';
import fc from 'fast-check';
import { parsePortRanges } from '@minimesh/config';
import { destination } from '@minimesh/proto';
import { createLogger, createRegistry } from '@minimesh/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DestinationError } from '../errors.js';
import { EndpointIndex } from '../index/endpoint-index.js';
import { toServiceRecord, toSliceRecord } from '../k8s/records.js';
import { createDestinationMetrics } from '../metrics.js';
import { MAX_AUTHORITY_LENGTH, parseAuthority, parseContextToken } from './authority.js';
import { createDestinationHandlers, destinationServiceDefinition, peerHost } from './destination-server.js';

const LIMIT = 1000;
const index = new EndpointIndex();
const metrics = createDestinationMetrics(createRegistry());
let server: Server;
let client: destination.DestinationClient;
let port = 0;

beforeAll(async () => {
  index.apply(
    'service',
    toServiceRecord({
      metadata: { name: 'web', namespace: 'shop' },
      spec: { clusterIP: '10.96.0.10', ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    }),
  );
  index.apply(
    'endpointslice',
    toSliceRecord({
      metadata: { name: 'web-a', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [{ addresses: ['10.1.0.1'] }],
    }),
  );
  server = new Server();
  server.addService(
    destinationServiceDefinition,
    createDestinationHandlers({
      index,
      metrics,
      logger: createLogger({ name: 'test', level: 'silent' }),
      streamQueueCapacity: 100,
      maxStreamsPerClient: LIMIT,
      translator: {
        controllerNamespace: 'minimesh',
        identityTrustDomain: 'cluster.local',
        clusterDomain: 'cluster.local',
        defaultOpaquePorts: parsePortRanges('t', ''),
        enableH2Upgrade: true,
      },
    }),
  );
  port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  client = new destination.DestinationClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
    'grpc.max_receive_message_length': 16 * 1024 * 1024,
  });
});

afterAll(() => {
  client?.close();
  server?.forceShutdown();
});

const openStreams = async (): Promise<number> =>
  (await metrics.openStreams.get()).values.reduce((a, v) => a + v.value, 0);

/** The first thing a Get stream yields: an update, or its error status. */
function first(
  path: string,
  contextToken = '',
  c: destination.DestinationClient = client,
): Promise<{ update?: unknown; code?: number; details?: string; call: ClientReadableStream<unknown> }> {
  return new Promise((resolve) => {
    const call = c.get({ scheme: 'k8s', path, contextToken });
    call.on('data', (update: unknown) => resolve({ update, call }));
    call.on('error', (err: { code: number; details: string }) =>
      resolve({ code: err.code, details: err.details, call }),
    );
  });
}

describe('destination: hostile requests', () => {
  it.each([
    ['a 1 MB authority', `${'a'.repeat(1024 * 1024)}.shop.svc.cluster.local:80`],
    ['513 characters', `${'a'.repeat(MAX_AUTHORITY_LENGTH - 20)}.shop.svc.cluster.local:80`],
    ['port 0', 'web.shop.svc.cluster.local:0'],
    ['port 65536', 'web.shop.svc.cluster.local:65536'],
    ['port -1', 'web.shop.svc.cluster.local:-1'],
    ['port 1e3', 'web.shop.svc.cluster.local:1e3'],
    ['a second colon', 'web.shop.svc.cluster.local:80:80'],
    ['NUL and CRLF', 'web\u0000.shop.svc.cluster.local\r\n:80'],
    ['a label over 63 characters', `${'b'.repeat(64)}.shop.svc.cluster.local:80`],
    ['an empty label', 'web..shop.svc.cluster.local:80'],
    ['five labels', 'a.b.c.web.shop.svc.cluster.local:80'],
    ['brackets without an address', '[]:80'],
    ['unicode', 'wéb.shop.svc.cluster.local:80'],
  ])('refuses %s with INVALID_ARGUMENT and a message under 1 KB', async (_name, path) => {
    const r = await first(path);
    expect(r.code).toBe(status.INVALID_ARGUMENT);
    expect(r.details?.length).toBeLessThan(1024);
    expect(r.details).toMatch(/^authority "/);
  });

  it.each(['{', 'null', '[1,2]', '"ns"', '{"ns": 5}', '\u0000\uffff', 'x'.repeat(100_000)])(
    'ignores a context token that is not a JSON object (%#) and serves the stream',
    async (token) => {
      const r = await first('web.shop.svc.cluster.local:80', token);
      expect(r.code).toBeUndefined();
      expect(r.update).toBeDefined();
      r.call.cancel();
    },
  );

  it('10,000 concurrent streams from one client: 1,000 served, 9,000 refused, bounded memory, slots returned', async () => {
    // Earlier tests' cancelled streams are closed on the server first (the limit counts open ones).
    for (let i = 0; i < 100 && (await openStreams()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await openStreams()).toBe(0);
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const results = await Promise.all(Array.from({ length: 10_000 }, () => first('web.shop.svc.cluster.local:80')));
    const served = results.filter((r) => r.update !== undefined);
    const refused = results.filter((r) => r.code === status.RESOURCE_EXHAUSTED);
    expect(served).toHaveLength(LIMIT);
    expect(refused).toHaveLength(10_000 - LIMIT);
    expect(refused[0]?.details).toMatch(/already has 1000 open streams/);
    const heapGrowthMb = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024;
    // Client and server share this process; 1,000 open streams plus 9,000 settled calls.
    console.log(`destination: 10,000 streams from one client: heap +${heapGrowthMb.toFixed(1)} MB`);
    expect(heapGrowthMb).toBeLessThan(400);
    // Close them: the client gets its slots back.
    for (const r of served) r.call.cancel();
    const again = await (async () => {
      for (let i = 0; i < 50; i++) {
        const r = await first('web.shop.svc.cluster.local:80');
        if (r.update !== undefined) return r;
        await new Promise((res) => setTimeout(res, 100));
      }
      return undefined;
    })();
    expect(again?.update).toBeDefined();
    again?.call.cancel();
  }, 120_000);
});

describe('peerHost', () => {
  it.each([
    ['127.0.0.1:5000', '127.0.0.1'],
    ['ipv4:10.0.0.1:5000', '10.0.0.1'],
    ['[::1]:5000', '::1'],
    ['ipv6:[fd00::1]:443', 'fd00::1'],
  ])('%s → %s', (peer, host) => expect(peerHost(peer)).toBe(host));
});

describe('authority and context token parsers (property)', () => {
  const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?$/);
  const hostile = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc
      .array(fc.oneof(label, fc.constantFrom('.', ':', '[', ']', '::', 'svc', 'cluster.local', '-1', '65536', ' ')), {
        maxLength: 10,
      })
      .map((xs) => xs.join('')),
  );

  it('any string is a valid service/IP authority that re-parses the same, or an INVALID_AUTHORITY error', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        let p: ReturnType<typeof parseAuthority>;
        try {
          p = parseAuthority(text, 'cluster.local');
        } catch (err) {
          expect(err).toBeInstanceOf(DestinationError);
          expect((err as DestinationError).code).toBe('MINIMESH_DESTINATION_INVALID_AUTHORITY');
          return;
        }
        expect(p.port >= 1 && p.port <= 65535).toBe(true);
        const again =
          p.kind === 'ip'
            ? `${p.ip.includes(':') ? `[${p.ip}]` : p.ip}:${p.port}`
            : `${p.hostname ? `${p.hostname}.` : ''}${p.service}.${p.namespace}.svc.cluster.local:${p.port}`;
        expect(parseAuthority(again, 'cluster.local')).toEqual(p);
      }),
      { numRuns: 5000 },
    );
  });

  it('valid service authorities round-trip', () => {
    fc.assert(
      fc.property(label, label, fc.integer({ min: 1, max: 65535 }), (svc, ns, port) => {
        expect(parseAuthority(`${svc}.${ns}.svc.cluster.local:${port}`, 'cluster.local')).toEqual({
          kind: 'service',
          service: svc,
          namespace: ns,
          port,
        });
      }),
      { numRuns: 1000 },
    );
  });

  it('any context token gives an object of string fields, never a throw', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          fc.jsonValue().map((v) => JSON.stringify(v) ?? ''),
        ),
        (token) => {
          const c = parseContextToken(token);
          expect(typeof c).toBe('object');
          for (const [k, v] of Object.entries(c)) {
            expect(['ns', 'nodeName', 'pod']).toContain(k);
            expect(typeof v).toBe('string');
          }
        },
      ),
      { numRuns: 3000 },
    );
  });
});
