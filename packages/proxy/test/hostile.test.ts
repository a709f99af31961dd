// Issue 17: hostile HTTP at the proxy's listeners, in-process on loopback (client → outbound A →
// mTLS → inbound B → app; the fake control plane speaks the real proto). Each case: a clear refusal,
// and nothing of it reaches the app.
// - request smuggling: Content-Length with Transfer-Encoding, obs-fold, a bare CR in a value, an
//   HTTP/2 pseudo-header in HTTP/1, two Content-Lengths → 400 and the connection closed;
// - oversized headers → 431; many headers still forwarded whole (no silent truncation to the app);
// - l5d-client-id and x-minimesh-* sent by the client (plaintext HTTP/1 or h2c into the inbound
//   listener, or through a meshed peer) never reach the app as the mesh's: plaintext → absent,
//   meshed → only the peer's real identity;
// - an HTTP/2 host header that disagrees with :authority → 400 (RFC 9113 §8.3.1), not forwarded;
// - 2,000 idle connections on the outbound listener do not stop it serving.
import { connect as h2connect } from 'node:http2';
import { connect as netConnect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProxy } from '../src/index.js';
import { h1Echo, h2Echo, listen } from './support/apps.js';
import { A_ID, WEB, startMeshedPair, type MeshedPair } from './support/meshed-pair.js';

let pair: MeshedPair;
let a: RunningProxy;
let b: RunningProxy;
const seen: string[] = [];
const closers: Array<{ close(): unknown }> = [];
/** The app port B's inbound forwards to: the HTTP/1 echo, or the HTTP/2 one for the h2 cases. */
let webPort: number;
let h2Port: number;
let appPort: number;

beforeAll(async () => {
  const web = h1Echo('web');
  web.on('request', (req) => seen.push(`${req.method} ${req.url}`));
  closers.push(web);
  webPort = await listen(web);
  appPort = webPort;
  const web2 = h2Echo('web-h2');
  web2.on('stream', (_s, h) => seen.push(`${String(h[':method'])} ${String(h[':path'])}`));
  closers.push(web2);
  h2Port = await listen(web2);
  pair = await startMeshedPair({ appPort: () => appPort });
  ({ a, b } = pair);
}, 120_000);

afterAll(async () => {
  await pair?.close();
  for (const c of closers) c.close();
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

describe('proxy: l5d-client-id and x-minimesh-* from the client', () => {
  const get = (port: number, path: string) =>
    raw(
      port,
      `GET ${path} HTTP/1.1\r\nHost: ${WEB}\r\nl5d-client-id: admin.kube-system.serviceaccount.identity.minimesh.cluster.local\r\n` +
        `X-Minimesh-Proxy-Error: forged\r\nx-minimesh-client-id: admin\r\nx-minimesh-anything: 1\r\nx-app-own: kept\r\nConnection: close\r\n\r\n`,
    );
  const bodyOf = (r: string) =>
    JSON.parse(r.slice(r.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, ''));
  const meshHeaders = (h: Record<string, string>) =>
    Object.keys(h).filter((k) => k === 'l5d-client-id' || k.startsWith('x-minimesh-'));

  it('plaintext (unmeshed client) into the inbound listener: the app gets none of them', async () => {
    const r = await get(b.ports.inbound, '/spoof-plain');
    expect(statusOf(r)).toBe(200);
    const h = bodyOf(r).headers;
    expect(meshHeaders(h)).toEqual([]);
    expect(h['x-app-own']).toBe('kept');
  });

  it("through a meshed peer (HTTP/2 between proxies): only the peer's proven identity, no x-minimesh-*", async () => {
    const r = await get(a.ports.outbound, '/spoof-meshed');
    expect(statusOf(r)).toBe(200);
    const h = bodyOf(r).headers;
    expect(meshHeaders(h)).toEqual(['l5d-client-id']);
    expect(h['l5d-client-id']).toBe(A_ID);
    expect(h['x-app-own']).toBe('kept');
  });

  it('HTTP/2 (h2c) straight into the inbound listener: the app gets none of them', async () => {
    appPort = h2Port;
    const r = await h2Get(b.ports.inbound, {
      ':path': '/spoof-h2',
      ':authority': WEB,
      'l5d-client-id': A_ID,
      'x-minimesh-proxy-error': 'forged',
    }).finally(() => (appPort = webPort));
    expect(r.status).toBe(200);
    expect(meshHeaders(JSON.parse(r.body).headers)).toEqual([]);
  });
});

/** One HTTP/2 request with prior knowledge (h2c) to a proxy listener; status and body. */
async function h2Get(
  port: number,
  headers: Record<string, string>,
): Promise<{ status: number; body: string; error?: string }> {
  const session = h2connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request(headers, { endStream: true });
      let status = 0;
      let error: string | undefined;
      let body = '';
      req.on('response', (h) => {
        status = Number(h[':status']);
        error = h['x-minimesh-proxy-error'] as string | undefined;
      });
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => resolve({ status, body, error }));
      req.on('error', reject);
    });
  } finally {
    session.close();
  }
}

describe('proxy: HTTP/2 host that disagrees with :authority', () => {
  beforeAll(() => void (appPort = h2Port));
  afterAll(() => void (appPort = webPort));
  it.each([
    ['outbound listener', () => a.ports.outbound],
    ['inbound listener', () => b.ports.inbound],
  ])('%s: refused with 400, nothing reaches the app', async (_name, port) => {
    const r = await h2Get(port(), { ':path': '/host-mismatch', ':authority': WEB, host: 'admin.internal' });
    expect(r.status).toBe(400);
    expect(r.error).toMatch(/^MINIMESH_PROXY_MALFORMED_REQUEST: HTTP\/2 request: host "admin.internal" differs/);
    expect(seen).not.toContain('GET /host-mismatch');
  });

  // Straight into B's inbound (a fresh connection): the original destination is per connection, and
  // A's pooled session to B was accepted while B forwarded to the HTTP/1 app.
  it('a host equal to :authority (any case, default port) is forwarded', async () => {
    const r = await h2Get(b.ports.inbound, {
      ':path': '/host-agrees',
      ':authority': WEB,
      host: `${WEB.toUpperCase()}:80`,
    });
    expect(r.error).toBeUndefined();
    expect(r.status).toBe(200);
    expect(seen).toContain('GET /host-agrees');
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
