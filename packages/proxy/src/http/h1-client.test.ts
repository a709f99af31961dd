// The HTTP/1 client's wire against real servers on loopback (node:http, and raw TCP servers for what
// node:http would not send): what it writes matches what node:http's ClientRequest wrote, the response
// headers match IncomingMessage's, and the cases a proxy meets: chunked request bodies, 1xx answers,
// HEAD, a body ended by the close, backpressure, a server that breaks the protocol or the connection.
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { H1Connection, requestHeadOf, type ConnectionOwner, type H1Response } from './h1-client.js';
import { headersOf } from './h1-wire.js';
import { afterTest, listen, until } from '../../test/support/loopback.js';

/** An owner that writes down what the connection told it. */
function owner(): ConnectionOwner & { released: number; forgotten: number; hints: Array<string | undefined> } {
  const o = {
    released: 0,
    forgotten: 0,
    hints: [] as Array<string | undefined>,
    release: (_c: H1Connection, hint: string | undefined) => {
      o.released++;
      o.hints.push(hint);
    },
    forget: () => {
      o.forgotten++;
    },
  };
  return o;
}

function connection(port: number, o = owner()): { conn: H1Connection; o: ReturnType<typeof owner> } {
  const conn = new H1Connection('127.0.0.1', port, o);
  afterTest(() => conn.abort());
  return { conn, o };
}

/** Sends one request on `conn` and reads the answer to its end. */
function exchange(
  conn: H1Connection,
  method = 'GET',
  path = '/',
  headers: Record<string, string | string[]> = {},
  body?: Array<string | Buffer>,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const w = conn.send(method, path, headers, body === undefined, {
      onResponse: (res: H1Response) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
        res.on('error', reject);
      },
      onFailure: reject,
    });
    if (w && body) {
      for (const c of body) w.write(c);
      w.end();
    }
  });
}

async function h1Server(answer: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders; raw: string[]; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw: req.rawHeaders, body });
      answer(req, res, body);
    });
  });
  server.keepAliveTimeout = 5000;
  const sockets: Socket[] = [];
  server.on('connection', (s: Socket) => sockets.push(s));
  const port = await listen(server);
  afterTest(() => {
    for (const s of sockets) s.destroy();
  });
  return { port, seen };
}

/** A TCP server that answers the first request head on each connection with `reply` (then `after`). */
async function rawServer(reply: string | Buffer, after?: (s: Socket) => void) {
  const sockets: Socket[] = [];
  const server = createTcpServer((s) => {
    sockets.push(s);
    let got = '';
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (!got.includes('\r\n\r\n')) return;
      got = '';
      s.write(reply);
      after?.(s);
    });
    s.on('error', () => {});
  });
  const port = await listen(server);
  afterTest(() => {
    for (const s of sockets) s.destroy();
  });
  return { port, sockets };
}

describe('the HTTP/1 client on llhttp', () => {
  it("the response's header object is node:http's, repeats and all", async () => {
    const { port } = await rawServer(
      'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-type: text/html\r\nSet-Cookie: a=1\r\n' +
        'set-cookie: b=2\r\nX-Dup: 1\r\nx-dup: 2\r\nCookie: c=3\r\nCookie: d=4\r\nLocation: /a\r\nLocation: /b\r\n' +
        'Content-Length: 2\r\n\r\nok',
    );
    const viaNode = await new Promise<IncomingMessage>((resolve, reject) => {
      const r = request({ host: '127.0.0.1', port, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res));
      });
      r.on('error', reject);
      r.end();
    });
    const { conn } = connection(port);
    const ours = await exchange(conn);
    expect(ours.headers).toEqual(viaNode.headers);
    expect(headersOf(viaNode.rawHeaders)).toEqual(viaNode.headers);
    expect(ours.body).toBe('ok');
  });

  it('writes what ClientRequest wrote: Host when none is given, Connection: keep-alive, Content-Length: 0 on a bodiless POST', async () => {
    const app = await h1Server((_req, res) => res.end('ok'));
    const { conn, o } = connection(app.port);
    await exchange(conn, 'GET', '/a?b=1', { 'x-one': '1', 'x-many': ['a', 'b'] });
    await until(() => o.released === 1);
    await exchange(conn, 'POST', '/p', { host: 'web.shop:8080' });
    await until(() => o.released === 2);
    await exchange(conn, 'DELETE', '/d');
    const [get, post, del] = app.seen;
    expect(get).toMatchObject({ method: 'GET', url: '/a?b=1' });
    expect(get!.headers).toMatchObject({ host: `127.0.0.1:${app.port}`, connection: 'keep-alive', 'x-one': '1' });
    expect(get!.raw.filter((_, i, r) => i % 2 === 0 && r[i] === 'x-many')).toHaveLength(2);
    expect(get!.headers['content-length']).toBeUndefined();
    expect(post!.headers).toMatchObject({ host: 'web.shop:8080', 'content-length': '0' });
    expect(del!.headers['content-length']).toBeUndefined();
    expect(del!.headers['transfer-encoding']).toBeUndefined();
  });

  it('a body of unknown length goes chunked (an empty write does not end it); one with a length goes as is', async () => {
    const app = await h1Server((_req, res, body) => res.end(`got ${body.length}`));
    const { conn, o } = connection(app.port);
    const r = await exchange(conn, 'POST', '/c', {}, ['hello', Buffer.alloc(0), ' world']);
    expect(r.body).toBe('got 11');
    await until(() => o.released === 1);
    await exchange(conn, 'PUT', '/l', { 'content-length': '4' }, ['abcd']);
    expect(app.seen[0]).toMatchObject({ body: 'hello world', headers: { 'transfer-encoding': 'chunked' } });
    expect(app.seen[1]).toMatchObject({ body: 'abcd', headers: { 'content-length': '4' } });
    expect(app.seen[1]!.headers['transfer-encoding']).toBeUndefined();
  });

  it('refuses, before writing anything, a head that would not be HTTP', () => {
    const head = (method: string, path: string, h: Record<string, string>) => () =>
      requestHeadOf(method, path, h, 'x:1', true);
    expect(head('GET', '/', { 'x-a': 'one\r\nInjected: yes' })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_CHAR' }) as Error,
    );
    expect(head('GET', '/', { 'bad name': '1' })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_HTTP_TOKEN' }) as Error,
    );
    expect(head('GET', '/a b', {})).toThrow(expect.objectContaining({ code: 'ERR_UNESCAPED_CHARACTERS' }) as Error);
    expect(head('G T', '/', {})).toThrow(expect.objectContaining({ code: 'ERR_INVALID_HTTP_TOKEN' }) as Error);
    expect(head('GET', '/ok', { 'x-latin': 'caf\u00e9' })()).toMatchObject({ chunked: false });
  });

  it('skips 1xx answers; a HEAD answer has no body; both leave the connection reusable', async () => {
    const { port } = await rawServer(
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n' +
        'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nKeep-Alive: timeout=5\r\n\r\nhello',
    );
    const { conn, o } = connection(port);
    expect(await exchange(conn)).toMatchObject({ status: 200, body: 'hello' });
    await until(() => o.released === 1);
    expect(o.hints).toEqual(['timeout=5']);
    const head = await rawServer('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n');
    const h = connection(head.port);
    expect(await exchange(h.conn, 'HEAD')).toMatchObject({ status: 200, body: '' });
    await until(() => h.o.released === 1);
  });

  it("a chunked body's trailers do not become the next response's headers, which may come in pieces", async () => {
    let n = 0;
    const { port } = await rawServer('', (s) => {
      if (n++ === 0) {
        s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n\r\n');
        s.write('2\r\nok\r\n0\r\nX-Trailer: t\r\n\r\n');
        return;
      }
      s.write('HTTP/1.1 201 Created\r\nX-First: 1\r\n');
      setTimeout(() => s.write('X-Second: 2\r\nContent-Length: 0\r\n\r\n'), 30);
    });
    const { conn, o } = connection(port);
    expect(await exchange(conn)).toMatchObject({ status: 200, body: 'ok' });
    await until(() => o.released === 1);
    const second = await exchange(conn);
    expect(second.status).toBe(201);
    expect(second.headers).toEqual({ 'x-first': '1', 'x-second': '2', 'content-length': '0' });
  });

  it('a body without a length ends with the connection, which is then not reused', async () => {
    const { port } = await rawServer('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end', (s) => s.end());
    const { conn, o } = connection(port);
    expect(await exchange(conn)).toMatchObject({ status: 200, body: 'until the end' });
    await until(() => o.forgotten === 1);
    expect(o.released).toBe(0);
  });

  it('stops reading the socket while the body is not read, and reads on when it is', async () => {
    const size = 8 * 1024 * 1024;
    const { port } = await rawServer(
      Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${size}\r\n\r\n`), Buffer.alloc(size, 'x')]),
    );
    const { conn, o } = connection(port);
    const res = await new Promise<H1Response>((resolve, reject) => {
      conn.send('GET', '/big', {}, true, { onResponse: resolve, onFailure: reject });
    });
    await new Promise((r) => setTimeout(r, 200));
    const whilePaused = conn.socket.bytesRead;
    expect(whilePaused).toBeLessThan(size / 2);
    let got = 0;
    res.on('data', (d: Buffer) => (got += d.length));
    await new Promise((r) => res.on('end', r));
    expect(got).toBe(size);
    await until(() => o.released === 1);
  });

  it("the server's errors, as node:http reported them", async () => {
    const garbage = await rawServer('HTTP/1.1 abc\r\n\r\n');
    await expect(exchange(connection(garbage.port).conn)).rejects.toMatchObject({
      code: expect.stringMatching(/^HPE_/) as string,
    });
    const hangUp = await rawServer('', (s) => s.destroy());
    await expect(exchange(connection(hangUp.port).conn)).rejects.toMatchObject({
      code: 'ECONNRESET',
      message: 'socket hang up',
    });
    const cut = await rawServer('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\npart', (s) =>
      setTimeout(() => s.destroy(), 10),
    );
    await expect(exchange(connection(cut.port).conn)).rejects.toMatchObject({ code: 'ECONNRESET', message: 'aborted' });
  });

  it('an answer nobody asked for closes an idle connection', async () => {
    const { port, sockets } = await rawServer('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
    const { conn, o } = connection(port);
    await exchange(conn);
    await until(() => o.released === 1);
    sockets[0]!.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
    await until(() => o.forgotten === 1);
    expect(conn.destroyed).toBe(true);
  });
});
