// The tap server over real mTLS on loopback, driven by grpc-js as the tap service drives it: the tap
// service's identity gets the events its match and limit ask for; any other identity gets
// PERMISSION_DENIED, no client certificate UNAUTHENTICATED, a bad match INVALID_ARGUMENT.
import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Http2SecureServer, Http2Session } from 'node:http2';
import { credentials, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@minimesh/runtime';
import { tap } from '@minimesh/proto';
import { createTapServer } from '../src/tap/server.js';
import { TapLayer } from '../src/tap/tap.js';
import { TlsCredentials } from '../src/tls/credentials.js';
import { createTestPki, type TestPki } from './support/pki.js';

const PROXY_ID = 'server.demo.serviceaccount.identity.minimesh.cluster.local';
const TAP_ID = 'minimesh-tap.minimesh.serviceaccount.identity.minimesh.cluster.local';
const OTHER_ID = 'default.demo.serviceaccount.identity.minimesh.cluster.local';

let pki: TestPki;
let layer: TapLayer;
let server: Http2SecureServer;
let port = 0;
const sessions = new Set<Http2Session>();

beforeAll(async () => {
  pki = await createTestPki();
  const creds = new TlsCredentials(PROXY_ID, pki.anchorPem);
  const leaf = await pki.leaf(PROXY_ID);
  const x = new X509Certificate(leaf.certPem);
  creds.set({ chainPem: leaf.certPem, keyPem: leaf.keyPem, leaf: x, notAfter: new Date(x.validTo) });
  layer = new TapLayer();
  server = createTapServer({ layer, creds, tapSvcName: TAP_ID, log: createLogger({ name: 'tap', level: 'silent' }) });
  server.on('session', (s: Http2Session) => sessions.add(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  for (const s of sessions) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

async function client(identity: string | undefined): Promise<tap.TapClient> {
  let creds: ChannelCredentials;
  if (identity) {
    const l = await pki.leaf(identity);
    creds = credentials.createSsl(Buffer.from(pki.anchorPem), Buffer.from(l.keyPem), Buffer.from(l.certPem));
  } else creds = credentials.createSsl(Buffer.from(pki.anchorPem));
  return new tap.TapClient(`127.0.0.1:${port}`, creds, {
    'grpc.ssl_target_name_override': PROXY_ID,
    'grpc.default_authority': PROXY_ID,
  });
}

const view = (path: string) => ({
  source: { ip: '10.23.0.5', port: 40000 },
  destination: { ip: '10.23.0.7', port: 8080 },
  destinationLabels: {},
  routeLabels: {},
  method: 'GET',
  scheme: 'http' as const,
  authority: 'server:8080',
  path,
});
const meta = { direction: 'inbound' as const, sourceLabels: { tls: 'true' }, destinationLabels: {} };
const until = async (f: () => boolean) => {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('the tap server', () => {
  it("streams the tap service's events: match, limit, then OK", async () => {
    const c = await client(TAP_ID);
    const call = c.observe({
      limit: 2,
      match: {
        match: {
          $case: 'http',
          value: { match: { $case: 'path', value: { match: { $case: 'prefix', value: '/a' } } } },
        },
      },
    });
    const got: tap.TapEvent[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', (e: tap.TapEvent) => got.push(e));
      call.on('end', resolve);
      call.on('error', reject);
    });
    await until(() => layer.active);
    expect(layer.active).toBe(true);
    for (const path of ['/b', '/a1', '/a2', '/a3']) {
      const r = layer.start(view(path), meta);
      r?.responseInit(200);
      r?.responseEnd({});
    }
    await done;
    expect(got).toHaveLength(6);
    const paths = got.flatMap((e) =>
      e.event?.value.event?.$case === 'requestInit' ? [e.event.value.event.value.path] : [],
    );
    expect(paths).toEqual(['/a1', '/a2']);
    expect(layer.active).toBe(false);
    expect(layer.count).toBe(0);
    c.close();
  });

  it('refuses any other identity, a client without one, and a bad match', async () => {
    const err = (c: tap.TapClient, req: tap.ObserveRequest) =>
      new Promise<ServiceError>((resolve) => {
        const call = c.observe(req);
        call.on('data', () => undefined);
        call.on('error', resolve);
        call.on('end', () => resolve({ code: 0, details: 'ended' } as ServiceError));
      });
    const other = await client(OTHER_ID);
    expect(await err(other, { limit: 1 })).toMatchObject({
      code: 7,
      details: `tap: client identity ${OTHER_ID} is not the tap service (${TAP_ID})`,
    });
    other.close();
    const anonymous = await client(undefined);
    expect(await err(anonymous, { limit: 1 })).toMatchObject({
      code: 16,
      details: 'tap: the client presented no mesh identity',
    });
    anonymous.close();
    const bad = await client(TAP_ID);
    expect(await err(bad, { limit: 1, match: {} })).toMatchObject({ code: 3 });
    bad.close();
    expect(layer.count).toBe(0);
  });

  it('a tap the client cancels is unregistered', async () => {
    const c = await client(TAP_ID);
    const call = c.observe({ limit: 100 });
    call.on('error', () => undefined);
    await until(() => layer.active);
    expect(layer.count).toBe(1);
    call.cancel();
    await until(() => !layer.active);
    expect(layer.count).toBe(0);
    c.close();
  });
});
