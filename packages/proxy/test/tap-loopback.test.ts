// Tap through the whole proxy on loopback: client → outbound proxy A → mTLS → inbound proxy B → app,
// both proxies serving tap to the tap service's identity only. A grpc-js client holding that identity
// taps B (inbound: the client identity A proved) and A (outbound: the server identity and destination's
// labels), with a path filter and a limit; a proxy without MINIMESH_PROXY_TAP_SVC_NAME serves no tap.
import { request as h1request } from 'node:http';
import type { Socket } from 'node:net';
import { credentials } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromTcpAddress, tap } from '@minimesh/proto';
import type { RunningProxy } from '../src/index.js';
import { h1Echo, listen } from './support/apps.js';
import { startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { removeTempDirs, startHarnessProxy } from './support/harness.js';
import { createTestPki, type TestPki } from './support/pki.js';

const A_ID = 'client.default.serviceaccount.identity.minimesh.cluster.local';
const B_ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
const TAP_ID = 'minimesh-tap.minimesh.serviceaccount.identity.minimesh.cluster.local';
const WEB = 'web.default.svc.cluster.local:80';

let pki: TestPki;
let cp: FakeControlPlane;
let a: RunningProxy;
let b: RunningProxy;
let plain: RunningProxy;
const app = h1Echo('web');

beforeAll(async () => {
  pki = await createTestPki();
  cp = await startFakeControlPlane(pki);
  const appPort = await listen(app);
  const env = { MINIMESH_PROXY_TAP_SVC_NAME: TAP_ID };
  b = await startHarnessProxy({
    identity: B_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    inbound: (s: Socket) => ({ ip: (s.localAddress ?? '').replace('::ffff:', ''), port: appPort }),
    env,
  });
  a = await startHarnessProxy({ identity: A_ID, anchorPem: pki.anchorPem, controlAddr: cp.addr, env });
  plain = await startHarnessProxy({ identity: A_ID, anchorPem: pki.anchorPem, controlAddr: cp.addr });
  cp.destination.set(WEB, [
    {
      ip: '127.0.0.1',
      port: b.ports.inbound,
      identity: B_ID,
      labels: { pod: 'web-1', namespace: 'default', deployment: 'web' },
    },
  ]);
  await Promise.all([a.ready, b.ready, plain.ready]);
});
afterAll(async () => {
  await a?.shutdown(100);
  await b?.shutdown(100);
  await plain?.shutdown(100);
  app.close();
  await cp?.close();
  removeTempDirs();
});

async function tapClient(port: number, proxyId: string): Promise<tap.TapClient> {
  const leaf = await pki.leaf(TAP_ID);
  const creds = credentials.createSsl(Buffer.from(pki.anchorPem), Buffer.from(leaf.keyPem), Buffer.from(leaf.certPem));
  return new tap.TapClient(`127.0.0.1:${port}`, creds, {
    'grpc.ssl_target_name_override': proxyId,
    'grpc.default_authority': proxyId,
  });
}

function get(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = h1request(
      { host: '127.0.0.1', port: a.ports.outbound, path, headers: { host: WEB }, agent: false },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Observes until the limit, while `traffic` runs; resolves with the events. */
async function observe(
  port: number,
  proxyId: string,
  req: tap.ObserveRequest,
  traffic: () => Promise<unknown>,
): Promise<tap.TapEvent[]> {
  const c = await tapClient(port, proxyId);
  const call = c.observe(req);
  const events: tap.TapEvent[] = [];
  const done = new Promise<void>((resolve, reject) => {
    call.on('data', (e: tap.TapEvent) => events.push(e));
    call.on('end', resolve);
    call.on('error', reject);
  });
  // Requests go until the tap has what it asked for (the call may not be registered yet at the first one).
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      await traffic();
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  await done;
  stop = true;
  await loop;
  c.close();
  return events;
}

const http = (e: tap.TapEvent) => (e.event?.$case === 'http' ? e.event.value.event : undefined);

describe('tap on loopback', () => {
  it("inbound at B: the path filter, the client's identity, status, latency and response bytes", async () => {
    const match: tap.ObserveRequest['match'] = {
      match: {
        $case: 'http',
        value: { match: { $case: 'path', value: { match: { $case: 'prefix', value: '/tapped' } } } },
      },
    };
    let body = '';
    const events = await observe(b.ports.control, B_ID, { limit: 2, match }, async () => {
      await get('/other');
      body = (await get('/tapped/x')).body;
    });
    expect(events.map((e) => http(e)?.$case)).toEqual([
      'requestInit',
      'responseInit',
      'responseEnd',
      'requestInit',
      'responseInit',
      'responseEnd',
    ]);
    const init = events[0]!;
    expect(init.proxyDirection).toBe(tap.TapEvent_ProxyDirection.INBOUND);
    expect(init.sourceMeta?.labels).toEqual({ tls: 'true', client_id: A_ID });
    expect(fromTcpAddress(init.destination)?.ip).toBe('127.0.0.1');
    const ri = http(init);
    expect(ri?.$case === 'requestInit' && ri.value).toMatchObject({
      path: '/tapped/x',
      authority: WEB,
      method: { type: { $case: 'registered', value: 0 } },
    });
    const rsp = http(events[1]!);
    expect(rsp?.$case === 'responseInit' && rsp.value.httpStatus).toBe(200);
    const end = http(events[2]!);
    expect(end?.$case === 'responseEnd' && Number(end.value.responseBytes)).toBe(Buffer.byteLength(body));
    // The stream id is the same in a request's three events.
    const ids = events
      .slice(0, 3)
      .map((e) => JSON.stringify(http(e)?.value.id, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
    expect(new Set(ids).size).toBe(1);
  });

  it("outbound at A: the server's identity and destination's labels", async () => {
    const events = await observe(a.ports.control, A_ID, { limit: 1 }, () => get('/out'));
    const init = events[0]!;
    expect(init.proxyDirection).toBe(tap.TapEvent_ProxyDirection.OUTBOUND);
    expect(init.destinationMeta?.labels).toMatchObject({
      tls: 'true',
      server_id: B_ID,
      pod: 'web-1',
      deployment: 'web',
    });
    expect(fromTcpAddress(init.destination)).toEqual({ ip: '127.0.0.1', port: b.ports.inbound });
  });

  it('a proxy without MINIMESH_PROXY_TAP_SVC_NAME serves no tap', () => {
    expect(plain.ports.control).toBe(0);
    expect(b.ports.control).toBeGreaterThan(0);
  });
});
