// The handoff to the HTTP servers on real loopback connections: HTTP/2 detected with its preface
// already read reaches the chain as an H2Exchange with the connection's target; a request whose host
// disagrees with :authority, and an HTTP/1 request Node's parser refuses, are answered 400 and go nowhere.
import { connect as h2connect } from 'node:http2';
import { createServer, type Server, type Socket } from 'node:net';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ProxyMetrics } from '../metrics/metrics.js';
import { H2Exchange } from './exchange.js';
import { CLIENT_IDLE_TIMEOUT_MS, HttpHandoff, type IncomingRequest } from './handoff.js';
import { afterTest, dial, listen } from '../../test/support/loopback.js';

const log = createLogger({ name: 'test', level: 'silent' });
/** A listener whose connections are handed to `handoff` as detection does: the first bytes read, then served. */
async function listener(protocol: 'http1' | 'h2', idleTimeoutMs?: number) {
  const calls: Array<[string, IncomingRequest]> = [];
  const handoff = new HttpHandoff<string>(
    { direction: 'inbound', metrics: new ProxyMetrics(new Registry()), log },
    (conn, req) => {
      calls.push([conn, req]);
      if (!req.upgrade) req.answer(204, 'ok', undefined);
    },
    30_000,
    idleTimeoutMs,
  );
  afterTest(() => handoff.h1.close());
  const server: Server = createServer((socket: Socket) => {
    socket.once('data', (prefix: Buffer) => {
      socket.pause();
      handoff.serve({ kind: 'http', protocol, parent: 'conn-h2', socket, prefix });
    });
  });
  return { port: await listen(server), calls, handoff };
}

function h2request(port: number, headers: Record<string, string>): Promise<{ status: number; error?: string }> {
  const session = h2connect(`http://127.0.0.1:${port}`);
  afterTest(() => session.destroy());
  return new Promise((resolve, reject) => {
    const req = session.request({ ':path': '/x', ...headers });
    req.on('response', (h) =>
      resolve({ status: Number(h[':status']), error: h['x-minimesh-proxy-error'] as string | undefined }),
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the HTTP handoff', () => {
  it('serves HTTP/2 whose preface detection already read: an H2Exchange with the target', async () => {
    const l = await listener('h2');
    expect((await h2request(l.port, { ':authority': 'web.shop:80' })).status).toBe(204);
    expect(l.calls[0]![0]).toBe('conn-h2');
    expect(l.calls[0]![1]).toBeInstanceOf(H2Exchange);
    expect(l.calls[0]![1]).toMatchObject({ authority: 'web.shop:80', path: '/x', protocol: 'h2' });
    expect(l.handoff.sessions.size).toBe(1);
  });

  it('refuses an HTTP/2 request whose host disagrees with :authority (400), before the chain', async () => {
    const l = await listener('h2');
    const r = await h2request(l.port, { ':authority': 'web.shop:80', host: 'admin.shop:80' });
    expect(r.status).toBe(400);
    expect(r.error).toMatch(/^MINIMESH_PROXY_MALFORMED_REQUEST/);
    expect(l.calls).toEqual([]);
  });

  it('answers an HTTP/1 request the parser refuses (Content-Length with Transfer-Encoding) with 400', async () => {
    const l = await listener('http1');
    const c = dial(l.port, (s) =>
      s.write('POST / HTTP/1.1\r\nhost: web\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n'),
    );
    const answer = await new Promise<string>((r) => {
      let got = '';
      c.on('data', (d: Buffer) => (got += d.toString()));
      c.on('close', () => r(got));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toContain('x-minimesh-proxy-error: invalid HTTP/1 request');
    expect(l.calls).toEqual([]);
  });

  it('keeps an idle HTTP/1 client connection for an hour by default, and closes it after its idle timeout', async () => {
    // A client pool reuses idle connections without knowing when the server closes them: a short
    // idle close loses the requests that race it (docs/reliability.md).
    expect(CLIENT_IDLE_TIMEOUT_MS).toBe(3_600_000);
    expect((await listener('http1')).handoff.h1.keepAliveTimeout).toBe(CLIENT_IDLE_TIMEOUT_MS);

    const l = await listener('http1', 300);
    const c = dial(l.port, (s) => s.write('GET /a HTTP/1.1\r\nhost: web\r\n\r\n'));
    let got = '';
    c.on('data', (d: Buffer) => (got += d.toString()));
    const closed = new Promise<number>((r) => c.on('close', () => r(Date.now())));
    await new Promise((r) => setTimeout(r, 150));
    c.write('GET /b HTTP/1.1\r\nhost: web\r\n\r\n'); // within the idle timeout: served on the same connection
    const t1 = Date.now();
    await new Promise((r) => setTimeout(r, 100));
    expect(got.match(/HTTP\/1\.1 204/g)).toHaveLength(2);
    const at = await closed;
    expect(at - t1).toBeGreaterThanOrEqual(250);
    expect(l.calls.map(([, r]) => r.path)).toEqual(['/a', '/b']);
  });
});
