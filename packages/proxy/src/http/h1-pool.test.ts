// The HTTP/1 keep-alive pool against real HTTP/1 servers on loopback, through the forwarder's HTTP/1 call:
// reuse (last freed first), what it will not reuse (a connection the server closes or announced a short
// idle timeout for, one idle past the pool's limit, more idle ones than its cap), a protocol switch
// nobody asked for, connect errors reaching the request as they are, close().
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { sendH1, type CallSink, type H1Call } from './forward.js';
import type { H1Response } from './h1-client.js';
import { H1Pool, serverIdleTimeoutMs, type H1Endpoint, type H1PoolOptions } from './h1-pool.js';
import { afterTest, closedPort, listen, until } from '../../test/support/loopback.js';

/** An app that counts its connections and answers each request with the remote port it came from. */
async function app(answer?: (req: IncomingMessage, res: ServerResponse) => void) {
  const connections: Socket[] = [];
  const seen: Array<{ url: string; host: string | undefined; port: number }> = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', host: req.headers.host, port: req.socket.remotePort ?? 0 });
    if (answer) return answer(req, res);
    res.end('ok');
  });
  server.keepAliveTimeout = 60_000; // Node's server announces it: `Keep-Alive: timeout=60`
  server.on('connection', (s: Socket) => connections.push(s));
  const port = await listen(server);
  afterTest(() => {
    for (const s of connections) s.destroy();
  });
  return { port, connections, seen, server };
}

function pool(port: number, opts?: H1PoolOptions) {
  const p = new H1Pool(opts);
  afterTest(() => p.close());
  return { pool: p, ep: p.endpoint(`127.0.0.1:${port}`, '127.0.0.1', port) };
}

/** A GET on `ep` through the forwarder's HTTP/1 call; resolves with the status, the body and whether the connection was reused. */
function get(
  ep: H1Endpoint,
  path = '/',
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; reused: boolean }> {
  return new Promise((resolve, reject) => {
    let call: H1Call | undefined = undefined;
    const sink: CallSink = {
      onHead: () => {
        const c = call as H1Call;
        const res = c.res as H1Response;
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode, body, reused: c.conn.reusedSocket }));
        res.on('error', reject);
      },
      onError: (err) => reject(err),
    };
    call = sendH1(ep, 'GET', path, headers, undefined, sink);
  });
}

describe('the HTTP/1 keep-alive pool', () => {
  it('reuses a connection once its response was read, the last freed first; reusedSocket says so', async () => {
    const a = await app();
    const { ep } = pool(a.port);
    // Two at once: two connections.
    await Promise.all([get(ep, '/1'), get(ep, '/2')]);
    await until(() => ep.idleCount === 2);
    expect(ep.openCount).toBe(2);
    const lastFreed = a.seen[1]!.port;
    const r = await get(ep, '/3');
    expect(r.reused).toBe(true);
    expect(a.seen[2]!.port).toBe(lastFreed);
    await until(() => ep.idleCount === 2);
    for (let i = 0; i < 10; i++) await get(ep, `/seq/${i}`);
    expect(a.connections.length).toBe(2);
  });

  it("keeps the request's Host and sends Connection: keep-alive", async () => {
    let connection: string | undefined;
    const a = await app((req, res) => {
      connection = req.headers.connection;
      res.end('ok');
    });
    const { ep } = pool(a.port);
    await get(ep, '/h', { host: 'web.shop.svc.cluster.local:8080' });
    expect(a.seen[0]!.host).toBe('web.shop.svc.cluster.local:8080');
    expect(connection).toBe('keep-alive');
  });

  it('does not keep a connection the server closes (Connection: close)', async () => {
    const a = await app((_req, res) => res.writeHead(200, { connection: 'close' }).end('bye'));
    const { ep } = pool(a.port);
    await get(ep);
    await until(() => ep.openCount === 0);
    expect(ep.idleCount).toBe(0);
    const r = await get(ep);
    expect(r.reused).toBe(false);
    expect(a.connections.length).toBe(2);
  });

  it("does not reuse a connection within a second of the server's announced idle timeout", async () => {
    // Node's server announces `Keep-Alive: timeout=2`: usable for 1 s here.
    const a = await app();
    a.server.keepAliveTimeout = 2000;
    const { ep } = pool(a.port);
    await get(ep);
    await until(() => ep.idleCount === 1);
    expect((await get(ep)).reused).toBe(true);
    await until(() => ep.idleCount === 1);
    await new Promise((r) => setTimeout(r, 1100));
    const late = await get(ep);
    expect(late.reused).toBe(false);
    expect(a.connections.length).toBe(2);
    expect(a.connections[0]!.destroyed || a.connections[0]!.readableEnded).toBe(true);
  });

  it('closes at once a connection whose announced idle timeout leaves no time (timeout=1)', async () => {
    const a = await app((_req, res) => res.writeHead(200, { 'keep-alive': 'timeout=1' }).end('ok'));
    const { ep } = pool(a.port);
    await get(ep);
    await until(() => ep.openCount === 0);
    expect(ep.idleCount).toBe(0);
  });

  it("does not reuse a connection idle longer than the pool's idle timeout; the sweep closes it", async () => {
    const a = await app();
    const { pool: p, ep } = pool(a.port, { idleTimeoutMs: 150, sweepIntervalMs: 3_600_000 });
    await get(ep);
    await until(() => ep.idleCount === 1);
    expect((await get(ep)).reused).toBe(true);
    await until(() => ep.idleCount === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect((await get(ep)).reused).toBe(false);
    await until(() => ep.idleCount === 1);
    await new Promise((r) => setTimeout(r, 200));
    p.sweep();
    await until(() => ep.openCount === 0);
    // An endpoint without connections is forgotten; a request that still holds it brings it back.
    p.sweep();
    expect(p.stats().endpoints).toBe(0);
    expect((await get(ep)).status).toBe(200);
    expect(p.stats().endpoints).toBe(1);
    expect(p.endpoint(ep.key, ep.ip, ep.port)).toBe(ep);
  });

  it('keeps at most maxIdlePerEndpoint idle connections', async () => {
    const a = await app();
    const { ep } = pool(a.port, { maxIdlePerEndpoint: 2 });
    await Promise.all([1, 2, 3, 4].map((i) => get(ep, `/${i}`)));
    await until(() => ep.openCount === 2);
    expect(ep.idleCount).toBe(2);
  });

  it('an idle connection the server closes leaves the pool', async () => {
    const a = await app();
    const { ep } = pool(a.port);
    await get(ep);
    await until(() => ep.idleCount === 1);
    a.connections[0]!.destroy();
    await until(() => ep.openCount === 0);
    expect(ep.idleCount).toBe(0);
  });

  it('a connection refused reaches the request as ECONNREFUSED', async () => {
    const port = await closedPort();
    const { ep } = pool(port);
    await expect(get(ep)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await until(() => ep.openCount === 0);
  });

  it('a 101 answer to a request that asked for no upgrade fails it; the connection is closed', async () => {
    // An Upgrade (WebSocket) never comes through the pool (upgrade.ts gives it a raw connection).
    const a = await app();
    a.server.removeAllListeners('request');
    a.server.on('request', (req: IncomingMessage) => {
      req.socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
    });
    const { ep } = pool(a.port);
    await expect(get(ep)).rejects.toMatchObject({ code: 'HPE_UNEXPECTED_RESPONSE' });
    await until(() => ep.openCount === 0);
    expect(ep.idleCount).toBe(0);
  });

  it('close() destroys idle and busy connections; a request after it is still answered', async () => {
    let hold: ServerResponse | undefined;
    const a = await app((req, res) => {
      if (req.url === '/hold') hold = res;
      else res.end('ok');
    });
    const { pool: p, ep } = pool(a.port);
    // The held request on a new connection: one on a reused connection that breaks goes again (the
    // keep-alive race, H1Call).
    const held = get(ep, '/hold').catch((err: NodeJS.ErrnoException) => err.code);
    const other = await get(ep, '/x');
    expect(other.status).toBe(200);
    await until(() => hold !== undefined);
    p.close();
    expect(await held).toBe('ECONNRESET');
    await until(() => a.connections.every((s) => s.destroyed || s.readableEnded));
    expect((await get(ep)).status).toBe(200);
  });
});

describe('serverIdleTimeoutMs', () => {
  it("reads Keep-Alive's timeout", () => {
    expect(serverIdleTimeoutMs('timeout=5')).toBe(5000);
    expect(serverIdleTimeoutMs('timeout=5, max=1000')).toBe(5000);
    expect(serverIdleTimeoutMs('max=10, timeout=30')).toBe(30_000);
    expect(serverIdleTimeoutMs('Timeout=2')).toBe(2000);
    expect(serverIdleTimeoutMs('max=10')).toBeUndefined();
    expect(serverIdleTimeoutMs('timeout=5')).toBe(5000);
  });
});
