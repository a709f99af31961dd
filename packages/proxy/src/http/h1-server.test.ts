// The HTTP/1 server's wire on real loopback connections, with node:http's client and raw sockets as
// callers: keep-alive and what every answer carries, pipelined requests answered in order, request
// bodies, the answer's framing (chunked, Content-Length, HEAD, 204, HTTP/1.0), Expect, an Upgrade handed
// over with its bytes, requests that cannot be read, a caller that goes away, backpressure, a drain.
import { Agent, request, type IncomingMessage } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { H1Server, type H1Reply, type H1Request, type H1ServerHandlers } from './h1-server.js';
import { afterTest, dial, listen, until } from '../../test/support/loopback.js';

type Handler = (req: H1Request, res: H1Reply) => void;

/** A listener whose connections the server serves; `answer` gets every request. */
async function server(answer: Handler, opts: { headersTimeoutMs?: number; idleTimeoutMs?: number } = {}) {
  const errors: Array<{ code: string | undefined; busy: boolean }> = [];
  const upgrades: Array<{ req: H1Request; socket: Socket; head: Buffer }> = [];
  const handlers: H1ServerHandlers = {
    request: answer,
    upgrade: (req, socket, head) => upgrades.push({ req, socket, head }),
    clientError: (err, socket, busy) => {
      errors.push({ code: err.code, busy });
      socket.destroy();
    },
  };
  const h1 = new H1Server(handlers, { headersTimeoutMs: 30_000, idleTimeoutMs: 60_000, ...opts });
  const sockets: Socket[] = [];
  const tcp = createServer((s) => {
    sockets.push(s);
    h1.serve(s, undefined);
  });
  const port = await listen(tcp);
  afterTest(() => {
    h1.close();
    for (const s of sockets) s.destroy();
  });
  return { port, h1, errors, upgrades, sockets };
}

/** Writes `bytes` on a new connection and collects what comes back until it closes (or `ms`). */
async function raw(port: number, bytes: string, ms = 300): Promise<string> {
  const c = dial(port, (s) => s.write(bytes));
  let got = '';
  c.on('data', (d: Buffer) => (got += d.toString('latin1')));
  await new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    c.on('close', () => {
      clearTimeout(t);
      resolve();
    });
  });
  c.destroy();
  return got;
}

function get(
  port: number,
  agent: Agent,
  path = '/',
  method = 'GET',
  body?: string,
): Promise<{ res: IncomingMessage; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path, method, agent }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ res, body: text }));
    });
    r.on('error', reject);
    r.end(body);
  });
}

function agent(): Agent {
  const a = new Agent({ keepAlive: true, maxSockets: 1 });
  afterTest(() => a.destroy());
  return a;
}

describe('the HTTP/1 server on llhttp', () => {
  it('keeps the connection: two requests, one socket; Date, Connection and Keep-Alive on every answer', async () => {
    const s = await server((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`you asked ${req.method} ${req.url}`);
    });
    const a = agent();
    const one = await get(s.port, a, '/one?x=1');
    const two = await get(s.port, a, '/two');
    expect(one.body).toBe('you asked GET /one?x=1');
    expect(two.body).toBe('you asked GET /two');
    expect(s.sockets).toHaveLength(1);
    expect(one.res.headers).toMatchObject({
      connection: 'keep-alive',
      'keep-alive': 'timeout=60',
      'content-length': '22',
      'content-type': 'text/plain',
    });
    expect(Date.parse(one.res.headers.date ?? '')).toBeGreaterThan(0);
  });

  it('answers pipelined requests in order, whichever is answered first', async () => {
    const s = await server((req, res) => {
      req.resume();
      const answer = () => res.writeHead(200).end(req.url);
      if (req.url === '/slow') setTimeout(answer, 50);
      else answer();
    });
    const got = await raw(s.port, 'GET /slow HTTP/1.1\r\nhost: a\r\n\r\nGET /fast HTTP/1.1\r\nhost: a\r\n\r\n', 300);
    expect(got.indexOf('/slow')).toBeGreaterThan(0);
    expect(got.indexOf('/fast')).toBeGreaterThan(got.indexOf('/slow'));
  });

  it('reads request bodies (chunked and with a length) and frames answers of unknown length as chunked', async () => {
    const s = await server((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        res.writeHead(200);
        res.write('got ');
        res.end(body);
      });
    });
    const chunked = await raw(
      s.port,
      'POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
    );
    expect(chunked).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(chunked).toContain('Transfer-Encoding: chunked\r\n');
    expect(chunked).toContain('\r\n4\r\ngot \r\nb\r\nhello world\r\n0\r\n\r\n');
    const viaNode = await get(s.port, agent(), '/', 'POST', 'abc');
    expect(viaNode.body).toBe('got abc');
  });

  it('HEAD and 204 carry no body; an HTTP/1.0 caller gets a body of unknown length ended by the close', async () => {
    const s = await server((req, res) => {
      req.resume();
      if (req.url === '/none') return void res.writeHead(204, { 'x-a': '1' }).end();
      // An app's answer to HEAD says how its GET would be framed; nothing of a body follows it.
      if (req.method === 'HEAD') return void res.writeHead(200, { 'transfer-encoding': 'chunked' }).end();
      res.writeHead(200);
      res.write('streamed');
      res.end();
    });
    const head = await raw(s.port, 'HEAD / HTTP/1.1\r\nhost: a\r\n\r\n', 150);
    expect(head).toContain('transfer-encoding: chunked\r\n');
    expect(head.split('\r\n\r\n')).toEqual([expect.stringMatching(/^HTTP\/1\.1 200 OK\r\n/) as string, '']);
    const none = await raw(s.port, 'GET /none HTTP/1.1\r\nhost: a\r\n\r\n', 150);
    expect(none).toMatch(/^HTTP\/1\.1 204 No Content\r\n/);
    expect(none.endsWith('\r\n\r\n')).toBe(true);
    const old = await raw(s.port, 'GET / HTTP/1.0\r\n\r\n', 1000);
    expect(old).toContain('Connection: close\r\n');
    expect(old).not.toContain('Transfer-Encoding');
    expect(old.endsWith('\r\n\r\nstreamed')).toBe(true); // and the connection closed (raw returned on close)
  });

  it('Expect: 100-continue is answered at once; another expectation gets 417 and goes nowhere', async () => {
    const seen: string[] = [];
    const s = await server((req, res) => {
      seen.push(req.url ?? '');
      req.resume();
      req.on('end', () => res.writeHead(201).end());
    });
    const cont = await raw(
      s.port,
      'POST /c HTTP/1.1\r\nhost: a\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\nok',
      200,
    );
    expect(cont).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 Created\r\n/);
    const other = await raw(s.port, 'GET /e HTTP/1.1\r\nhost: a\r\nexpect: something\r\n\r\n', 200);
    expect(other).toMatch(/^HTTP\/1\.1 417 Expectation Failed\r\n/);
    expect(seen).toEqual(['/c']);
  });

  it('hands an Upgrade over with the bytes after its head; the socket is not read until its owner reads it', async () => {
    const s = await server(() => expect.fail('not a request'));
    const c = dial(s.port, (sock) =>
      sock.write('GET /ws HTTP/1.1\r\nhost: a\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\nfirst'),
    );
    afterTest(() => c.destroy());
    await until(() => s.upgrades.length === 1);
    const u = s.upgrades[0]!;
    expect(u.req.headers.upgrade).toBe('echo');
    expect(u.req.url).toBe('/ws');
    expect(u.head.toString()).toBe('first');
    c.write('second');
    await new Promise((r) => setTimeout(r, 50));
    let later = '';
    u.socket.on('data', (d: Buffer) => (later += d.toString()));
    await until(() => later === 'second');
  });

  it('refuses what it cannot read: a parse error, headers over 16 KiB, headers too slow', async () => {
    const s = await server((_req, res) => res.writeHead(200).end(), { headersTimeoutMs: 150 });
    await raw(s.port, 'GET / HTTP/1.1\r\nhost: a\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n', 150);
    await raw(s.port, `GET / HTTP/1.1\r\nhost: a\r\nx-big: ${'a'.repeat(17_000)}\r\n\r\n`, 150);
    const t0 = Date.now();
    await raw(s.port, 'GET / HTTP/1.1\r\nhost: a\r\n', 1000);
    const slowAfter = Date.now() - t0;
    expect(s.errors.map((e) => e.code)).toEqual([
      expect.stringMatching(/^HPE_/) as string,
      'HPE_HEADER_OVERFLOW',
      'ERR_HTTP_REQUEST_TIMEOUT',
    ]);
    expect(s.errors.every((e) => !e.busy)).toBe(true);
    expect(slowAfter).toBeGreaterThanOrEqual(140);
    expect(slowAfter).toBeLessThan(900);
  });

  it('Connection: close is honoured; a caller gone before the answer ended closes it unfinished', async () => {
    let held: H1Reply | undefined;
    const closes: boolean[] = [];
    const s = await server((req, res) => {
      req.resume();
      res.on('close', () => closes.push(res.writableFinished));
      if (req.url === '/hold') {
        held = res;
        res.writeHead(200);
        res.write('part');
        return;
      }
      res.writeHead(200).end('bye');
    });
    const closed = await raw(s.port, 'GET / HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n', 1000);
    expect(closed).toContain('Connection: close\r\n');
    expect(closed.endsWith('bye')).toBe(true);
    await raw(s.port, 'GET /hold HTTP/1.1\r\nhost: a\r\n\r\n', 100);
    await until(() => closes.length === 2);
    expect(closes).toEqual([true, false]);
    expect(held?.destroyed).toBe(true);
  });

  it('stops reading a request body nobody reads, and reads on when it is read', async () => {
    let req: H1Request | undefined;
    const s = await server((r) => {
      req = r;
    });
    const size = 8 * 1024 * 1024;
    const c = dial(s.port, (sock) => {
      sock.write(`POST / HTTP/1.1\r\nhost: a\r\ncontent-length: ${size}\r\n\r\n`);
      sock.write(Buffer.alloc(size, 'x'));
    });
    afterTest(() => c.destroy());
    await until(() => req !== undefined);
    await new Promise((r) => setTimeout(r, 200));
    expect(req!.socket.bytesRead).toBeLessThan(size / 2);
    let got = 0;
    req!.on('data', (d: Buffer) => (got += d.length));
    await new Promise((r) => req!.on('end', r));
    expect(got).toBe(size);
  });

  it('a drain closes idle connections and not busy ones; the idle timeout closes idle ones', async () => {
    let held: H1Reply | undefined;
    const s = await server(
      (req, res) => {
        req.resume();
        if (req.url === '/hold') held = res;
        else res.writeHead(200).end('ok');
      },
      { idleTimeoutMs: 60_000 },
    );
    const idle = dial(s.port, (sock) => sock.write('GET / HTTP/1.1\r\nhost: a\r\n\r\n'));
    const busy = dial(s.port, (sock) => sock.write('GET /hold HTTP/1.1\r\nhost: a\r\n\r\n'));
    afterTest(() => {
      idle.destroy();
      busy.destroy();
    });
    let idleGot = '';
    idle.on('data', (d: Buffer) => (idleGot += d.toString()));
    await until(() => idleGot.endsWith('ok') && held !== undefined);
    s.h1.closeIdleConnections();
    await until(() => idle.destroyed || idle.readableEnded);
    expect(busy.readableEnded).toBe(false);
    held!.writeHead(200).end('late');
    let busyGot = '';
    busy.on('data', (d: Buffer) => (busyGot += d.toString()));
    await until(() => busyGot.endsWith('late'));
    expect(busyGot).toContain('Connection: close\r\n'); // answered during the drain: not kept

    const short = await server(
      (req, res) => {
        req.resume();
        res.writeHead(200).end();
      },
      { idleTimeoutMs: 100 },
    );
    const t0 = Date.now();
    await raw(short.port, 'GET / HTTP/1.1\r\nhost: a\r\n\r\n', 2000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    expect(Date.now() - t0).toBeLessThan(1000);
  });
});
