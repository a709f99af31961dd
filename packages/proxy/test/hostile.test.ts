// Issue 17: hostile HTTP at the proxy's listeners, in-process on loopback (client → outbound A →
// mTLS → inbound B → app; the fake control plane speaks the real proto). Each case: a clear refusal,
// and nothing of it reaches the app.
// - request smuggling: Content-Length with Transfer-Encoding, obs-fold, a bare CR in a value, an
//   HTTP/2 pseudo-header in HTTP/1, two Content-Lengths → 400 and the connection closed;
// - oversized headers → 431; many headers still forwarded whole (no silent truncation to the app);
// - l5d-client-id sent by the client (plaintext into the inbound listener, or through a meshed peer)
//   never reaches the app as the mesh's: plaintext → absent, meshed → the peer's real identity;
// - 2,000 idle connections on the outbound listener do not stop it serving.
import { connect as netConnect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProxy } from '../src/index.js';
import { h1Echo, listen } from './support/apps.js';
import { startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { removeTempDirs, startHarnessProxy } from './support/harness.js';
import { createTestPki } from './support/pki.js';

const A_ID = 'client.default.serviceaccount.identity.minimesh.cluster.local';
const B_ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
const WEB = 'web.default.svc.cluster.local';

let cp: FakeControlPlane;
let a: RunningProxy;
let b: RunningProxy;
const seen: string[] = [];
const closers: Array<{ close(): unknown }> = [];

beforeAll(async () => {
  const pki = await createTestPki();
  cp = await startFakeControlPlane(pki);
  const web = h1Echo('web');
  web.on('request', (req) => seen.push(`${req.method} ${req.url}`));
  closers.push(web);
  const webPort = await listen(web);
  b = await startHarnessProxy({
    identity: B_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    inbound: () => ({ ip: '127.0.0.1', port: webPort }),
  });
  a = await startHarnessProxy({
    identity: A_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    outbound: () => ({ ip: '10.96.0.80', port: 80 }),
  });
  cp.destination.set(`${WEB}:80`, [{ ip: '127.0.0.1', port: b.ports.inbound, identity: B_ID }]);
  cp.destination.profiles.set('10.96.0.80:80', { fullyQualifiedName: WEB });
  await Promise.all([a.ready, b.ready]);
}, 120_000);

afterAll(async () => {
  await a?.shutdown(100);
  await b?.shutdown(100);
  for (const c of closers) c.close();
  await cp?.close();
  removeTempDirs();
});

/** Writes raw bytes, returns everything the listener answers until it closes (or 5 s). */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const s = netConnect(port, '127.0.0.1', () => s.write(text));
    const done = () => {
      clearTimeout(t);
      s.destroy();
      resolve(out);
    };
    const t = setTimeout(done, 5000);
    s.on('data', (d: Buffer) => (out += d.toString('latin1')));
    s.on('end', done);
    s.on('error', done);
  });
}

const statusOf = (response: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);

describe('proxy: hostile HTTP/1', () => {
  it('forwards a normal request (the baseline the refusals are measured against)', async () => {
    const r = await raw(a.ports.outbound, `GET /ok HTTP/1.1\r\nHost: ${WEB}\r\nConnection: close\r\n\r\n`);
    expect(statusOf(r)).toBe(200);
    expect(seen).toContain('GET /ok');
  });

  it.each([
    [
      'Content-Length with Transfer-Encoding (CL.TE smuggling)',
      `POST /cl-te HTTP/1.1\r\nHost: ${WEB}\r\nContent-Length: 35\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nX: y\r\n\r\n`,
    ],
    [
      'two different Content-Lengths',
      `POST /cl-cl HTTP/1.1\r\nHost: ${WEB}\r\nContent-Length: 0\r\nContent-Length: 34\r\n\r\nGET /smuggled HTTP/1.1\r\nX: y\r\n\r\n`,
    ],
    [
      'Transfer-Encoding not ending in chunked',
      `POST /te HTTP/1.1\r\nHost: ${WEB}\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n`,
    ],
    ['obs-fold', `GET /fold HTTP/1.1\r\nHost: ${WEB}\r\nX-A: one\r\n two\r\n\r\n`],
    ['a bare CR in a header value', `GET /cr HTTP/1.1\r\nHost: ${WEB}\r\nX-A: one\rtwo\r\n\r\n`],
    ['an HTTP/2 pseudo-header', `GET /pseudo HTTP/1.1\r\nHost: ${WEB}\r\n:authority: evil.example\r\n\r\n`],
    ['a space before the colon', `GET /space HTTP/1.1\r\nHost: ${WEB}\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n`],
  ])('refuses %s with 400 and forwards nothing', async (_name, text) => {
    const path = /^\w+ (\S+)/.exec(text)?.[1] ?? '';
    const r = await raw(a.ports.outbound, text);
    expect(statusOf(r)).toBe(400);
    expect(seen).not.toContain(`GET /smuggled`);
    expect(seen.some((s) => s.endsWith(` ${path}`))).toBe(false);
  });

  it('refuses headers over 16 KB with 431', async () => {
    const r = await raw(a.ports.outbound, `GET /big HTTP/1.1\r\nHost: ${WEB}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(statusOf(r)).toBe(431);
    expect(seen).not.toContain('GET /big');
  });
});

describe('proxy: l5d-client-id from the client', () => {
  const get = (port: number, path: string) =>
    raw(
      port,
      `GET ${path} HTTP/1.1\r\nHost: ${WEB}\r\nl5d-client-id: admin.kube-system.serviceaccount.identity.minimesh.cluster.local\r\nConnection: close\r\n\r\n`,
    );
  const bodyOf = (r: string) =>
    JSON.parse(r.slice(r.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, ''));

  it('plaintext into the inbound listener: the app gets no l5d-client-id', async () => {
    const r = await get(b.ports.inbound, '/spoof-plain');
    expect(statusOf(r)).toBe(200);
    expect(bodyOf(r).headers['l5d-client-id']).toBeUndefined();
  });

  it("through a meshed peer: the app gets the peer's proven identity, not the claimed one", async () => {
    const r = await get(a.ports.outbound, '/spoof-meshed');
    expect(statusOf(r)).toBe(200);
    expect(bodyOf(r).headers['l5d-client-id']).toBe(A_ID);
  });
});

describe('proxy: idle connections', () => {
  it('2,000 idle connections on the outbound listener do not stop it serving', async () => {
    const idle: Socket[] = [];
    await Promise.all(
      Array.from(
        { length: 2000 },
        () =>
          new Promise<void>((resolve) => {
            const s = netConnect(a.ports.outbound, '127.0.0.1', () => resolve());
            s.on('error', () => resolve());
            idle.push(s);
          }),
      ),
    );
    const t0 = Date.now();
    const r = await raw(a.ports.outbound, `GET /after-idle HTTP/1.1\r\nHost: ${WEB}\r\nConnection: close\r\n\r\n`);
    const ms = Date.now() - t0;
    console.log(`proxy: a request beside 2,000 idle connections took ${ms} ms`);
    expect(statusOf(r)).toBe(200);
    expect(ms).toBeLessThan(5000);
    for (const s of idle) s.destroy();
  }, 60_000);
});
