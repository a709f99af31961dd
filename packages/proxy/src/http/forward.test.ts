// The one forwarder's two halves against real HTTP/1 and HTTP/2 servers on loopback: each caller ×
// upstream combination, trailers, a failure before the head (the sink's) and after it (the hooks'), and
// release() handing an unread HTTP/1 response's connection back to the pool.
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  connect as h2connect,
  createServer as createH2Server,
  type ClientHttp2Session,
  type IncomingHttpHeaders as H2Headers,
  type ServerHttp2Stream,
} from 'node:http2';
import { describe, expect, it } from 'vitest';
import { PassThrough, Readable } from 'node:stream';
import {
  copyBodyToH1,
  sendH1,
  sendH2,
  writeResponseH1,
  writeResponseH2,
  type CallSink,
  type ExchangeHooks,
  type UpstreamCall,
} from './forward.js';
import { H1Pool, type H1Endpoint } from './h1-pool.js';
import { h1ToH1Request, h1ToH2Request, h2ToH1Request, h2ToH2Request } from './headers.js';
import { afterTest, closedPort, listen, until } from '../../test/support/loopback.js';

/** Hooks that write down what the forwarder told them; a broken response breaks `downstream` off. */
function recordingHooks(
  events: string[] = [],
  downstream?: { destroy(err?: Error): unknown },
): ExchangeHooks & { events: string[] } {
  return {
    events,
    onResponse: (status, grpc) => events.push(`response ${status}${grpc === undefined ? '' : ` grpc ${grpc}`}`),
    onEnd: (failed) => events.push(`end${failed ? ' failed' : ''}`),
    onError: (err) => events.push(`error ${(err as NodeJS.ErrnoException).code ?? err.message}`),
    onBroken: (err) => {
      events.push('end failed');
      downstream?.destroy(err);
    },
  };
}

/** An HTTP/1 app that echoes what it got: method, path, headers and body. */
async function h1App(answer?: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders; body: string }> = [];
  const sockets = new Set<unknown>();
  const server = createServer((req, res) => {
    sockets.add(req.socket);
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (answer) return answer(req, res, body);
      res.writeHead(201, { 'x-app': 'h1', connection: 'keep-alive' }).end(`echo:${body}`);
    });
  });
  const port = await listen(server);
  return { port, seen, sockets };
}

/** An HTTP/2 app answering with a body and trailers. */
async function h2App() {
  const seen: Array<{ headers: H2Headers; body: string }> = [];
  const server = createH2Server();
  server.on('stream', (stream: ServerHttp2Stream, headers: H2Headers) => {
    let body = '';
    stream.on('data', (c: Buffer) => (body += c.toString()));
    stream.on('end', () => {
      seen.push({ headers, body });
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-app': 'h2' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-trailer': 'kept' }));
      stream.end(`echo:${body}`);
    });
  });
  const port = await listen(server);
  const session: ClientHttp2Session = h2connect(`http://127.0.0.1:${port}`);
  afterTest(() => session.destroy());
  return { port, seen, session };
}

/** A sink that writes the response at once (what an exchange does), or answers 502 on an early failure. */
function passThrough(write: (call: UpstreamCall) => void, fail: (err: Error) => void, hooks: ExchangeHooks): CallSink {
  return {
    onHead: write,
    onError: (err) => {
      hooks.onError(err);
      fail(err);
    },
  };
}

function fetchH1(
  port: number,
  opts: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: opts.method ?? 'GET', path: opts.path ?? '/', headers: opts.headers },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

function fetchH2(
  port: number,
  headers: Record<string, string>,
  body: string,
): Promise<{ headers: H2Headers; trailers: H2Headers | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const session = h2connect(`http://127.0.0.1:${port}`);
    afterTest(() => session.destroy());
    const req = session.request({ ':method': 'POST', ':path': '/h2', ...headers });
    let head: H2Headers = {};
    let trailers: H2Headers | undefined;
    let text = '';
    req.on('response', (h) => (head = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => resolve({ headers: head, trailers, body: text }));
    req.on('error', reject);
    req.end(body);
  });
}

/** A keep-alive pool, destroyed after the test. */
/** The proxy's keep-alive pool to 127.0.0.1:`port`. */
function pool(port: number): H1Endpoint {
  const p = new H1Pool();
  afterTest(() => p.close());
  return p.endpoint(`127.0.0.1:${port}`, '127.0.0.1', port);
}

/** An HTTP/1 proxy: `send` forwards each request, its answer written at once (502 on an early failure). */
async function h1Proxy(send: (req: IncomingMessage, sink: CallSink) => void) {
  const events: string[] = [];
  const proxy = createServer((req, res) => {
    const hooks = recordingHooks(events, res);
    send(
      req,
      passThrough(
        (call) => writeResponseH1(res, call, hooks),
        () => res.writeHead(502).end(),
        hooks,
      ),
    );
  });
  return { port: await listen(proxy), hooks: { events } };
}

/** An HTTP/2 proxy, likewise. */
async function h2Proxy(send: (stream: ServerHttp2Stream, headers: H2Headers, sink: CallSink) => void) {
  const events: string[] = [];
  const proxy = createH2Server();
  proxy.on('stream', (stream: ServerHttp2Stream, headers: H2Headers) => {
    const hooks = recordingHooks(events, stream);
    send(
      stream,
      headers,
      passThrough(
        (call) => writeResponseH2(stream, call, hooks),
        () => stream.respond({ ':status': 502 }, { endStream: true }),
        hooks,
      ),
    );
  });
  return { port: await listen(proxy), hooks: { events } };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('the forwarder', () => {
  it('HTTP/1 caller → HTTP/1 upstream: connection headers dropped, extra added, body and response intact', async () => {
    const app = await h1App();
    const agent = pool(app.port);
    const { port, hooks } = await h1Proxy((req, sink) =>
      sendH1(agent, req.method, req.url, h1ToH1Request(req.headers, { 'x-extra': 'added' }), req, sink),
    );
    const r = await fetchH1(port, {
      method: 'POST',
      path: '/p?q=1',
      headers: { 'proxy-connection': 'keep-alive', 'x-mine': '1' },
      body: 'hello',
    });
    expect(r).toMatchObject({ status: 201, body: 'echo:hello', headers: { 'x-app': 'h1' } });
    expect(app.seen[0]).toMatchObject({ method: 'POST', url: '/p?q=1', body: 'hello' });
    expect(app.seen[0]!.headers).toMatchObject({ 'x-mine': '1', 'x-extra': 'added' });
    expect(app.seen[0]!.headers['proxy-connection']).toBeUndefined();
    expect(hooks.events).toEqual(['response 201', 'end']);
  });

  it('HTTP/2 caller → HTTP/2 upstream: trailers and the gRPC status go through', async () => {
    const app = await h2App();
    const { port, hooks } = await h2Proxy((stream, headers, sink) =>
      sendH2(app.session, h2ToH2Request(headers, { 'x-extra': 'added' }), stream, sink),
    );
    const r = await fetchH2(port, { 'content-type': 'application/grpc', te: 'trailers' }, 'ping');
    expect(r.headers[':status']).toBe(200);
    expect(r.headers['x-app']).toBe('h2');
    expect(r.body).toBe('echo:ping');
    expect(r.trailers).toMatchObject({ 'grpc-status': '0', 'x-trailer': 'kept' });
    expect(app.seen[0]!.headers).toMatchObject({ ':path': '/h2', 'x-extra': 'added', te: 'trailers' });
    await settle();
    expect(hooks.events).toEqual(['response 200', 'end']);
  });

  it('HTTP/2 caller → HTTP/1 upstream (an upgraded request to the app): Host from :authority', async () => {
    const app = await h1App();
    const agent = pool(app.port);
    const { port, hooks } = await h2Proxy((stream, headers, sink) =>
      sendH1(agent, String(headers[':method']), String(headers[':path']), h2ToH1Request(headers), stream, sink),
    );
    const r = await fetchH2(port, { ':authority': 'web.shop.svc.cluster.local:80' }, 'body');
    expect(r.headers[':status']).toBe(201);
    expect(r.body).toBe('echo:body');
    expect(app.seen[0]).toMatchObject({ method: 'POST', url: '/h2', body: 'body' });
    expect(app.seen[0]!.headers.host).toBe('web.shop.svc.cluster.local:80');
    await settle();
    expect(hooks.events).toEqual(['response 201', 'end']);
  });

  it('HTTP/1 caller → HTTP/2 upstream: the HTTP/2 head becomes an HTTP/1 one', async () => {
    const app = await h2App();
    const { port, hooks } = await h1Proxy((req, sink) =>
      sendH2(app.session, h1ToH2Request(req.method ?? 'GET', req.url ?? '/', req.headers, 'web:80', {}), req, sink),
    );
    const r = await fetchH1(port, { method: 'PUT', path: '/x', body: 'up' });
    expect(r).toMatchObject({ status: 200, body: 'echo:up', headers: { 'x-app': 'h2' } });
    expect(app.seen[0]!.headers).toMatchObject({ ':method': 'PUT', ':path': '/x', ':authority': 'web:80' });
    await settle();
    expect(hooks.events).toEqual(['response 200', 'end']);
  });

  it('a failure before the head goes to the sink; the hooks hear nothing else', async () => {
    const deadPort = await closedPort();
    const agent = pool(deadPort);
    const { port, hooks } = await h1Proxy((req, sink) =>
      sendH1(agent, req.method, req.url, h1ToH1Request(req.headers, {}), undefined, sink),
    );
    expect((await fetchH1(port)).status).toBe(502);
    expect(hooks.events).toEqual(['error ECONNREFUSED']);
  });

  it("a failure after the head breaks the caller's response and ends the exchange as failed", async () => {
    const app = await h1App((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const agent = pool(app.port);
    const { port, hooks } = await h1Proxy((req, sink) =>
      sendH1(agent, req.method, req.url, h1ToH1Request(req.headers, {}), undefined, sink),
    );
    await expect(fetchH1(port)).rejects.toThrow();
    expect(hooks.events).toEqual(['response 200', 'end failed']);
  });

  it('release() reads an unwanted HTTP/1 response to its end: the next request reuses the connection', async () => {
    const app = await h1App();
    const target = pool(app.port);
    const heads: UpstreamCall[] = [];
    const sink: CallSink = { onHead: (call) => heads.push(call), onError: (err) => expect.fail(err.message) };
    sendH1(target, 'GET', '/first', {}, undefined, sink);
    await until(() => heads.length === 1);
    heads[0]!.release();
    await until(() => target.idleCount === 1); // read to its end: the connection is idle again
    sendH1(target, 'GET', '/second', {}, undefined, sink);
    await until(() => heads.length === 2);
    heads[1]!.release();
    expect(app.seen.map((s) => s.url)).toEqual(['/first', '/second']);
    expect(app.sockets.size).toBe(1);
  });

  it('cancel() on a kept-alive connection ends the call: it does not go again as a stale keep-alive', async () => {
    // A route's timeout cancels a call whose request went on a reused connection. Destroying it fails
    // the request with ECONNRESET on a reused socket, which is what the keep-alive race looks like: the
    // call must not take that for the race and send the request again (its answer would then reach an
    // exchange that already answered 504: "Cannot write headers after they are sent").
    let slow = false;
    const app = await h1App((req, res) => {
      if (!slow) return void res.writeHead(200, { connection: 'keep-alive' }).end('ok');
      setTimeout(() => res.writeHead(200, { connection: 'keep-alive' }).end('late'), 100);
    });
    const target = pool(app.port);
    const heads: UpstreamCall[] = [];
    const errors: string[] = [];
    const sink: CallSink = { onHead: (call) => heads.push(call), onError: (err) => errors.push(err.message) };
    sendH1(target, 'GET', '/warm', {}, undefined, sink);
    await until(() => heads.length === 1);
    heads[0]!.release();
    await new Promise((r) => setTimeout(r, 20)); // the connection is back in the pool
    slow = true;
    const call = sendH1(target, 'GET', '/slow', {}, undefined, sink);
    await until(() => app.seen.length === 2);
    expect(call.conn.reusedSocket).toBe(true);
    call.cancel();
    await new Promise((r) => setTimeout(r, 300));
    expect(app.seen.map((s) => s.url)).toEqual(['/warm', '/slow']);
    expect(heads.length).toBe(1);
    // The cancel's own failure is reported once (an exchange that ended ignores it), and that is all.
    expect(errors).toEqual(['socket hang up']);
  });
});

describe('copyBodyToH1', () => {
  it('a body larger than the buffers reaches a caller that reads late, whole, the source paused meanwhile', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const chunks = 64; // 4 MiB
    let pauses = 0;
    const server = createServer((_req, res) => {
      const src = new Readable({ read() {} });
      src.on('pause', () => pauses++);
      for (let i = 0; i < chunks; i++) src.push(chunk);
      src.push(null);
      res.writeHead(200);
      copyBodyToH1(src, res);
    });
    const port = await listen(server);
    const received = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port }, (res) => {
        res.pause();
        setTimeout(() => {
          let n = 0;
          res.on('data', (c: Buffer) => (n += c.length));
          res.on('end', () => resolve(n));
          res.resume();
        }, 300);
      });
      req.on('error', reject);
      req.end();
    });
    expect(received).toBe(chunks * chunk.length);
    expect(pauses).toBeGreaterThan(0);
  });

  it('a caller that went away: the rest of the body is dropped, not written to the destroyed response', async () => {
    const src = new PassThrough();
    const resErrors: string[] = [];
    let srcEnded = false;
    src.on('end', () => (srcEnded = true));
    let responseClosed = false;
    const server = createServer((_req, res) => {
      res.on('error', (err: NodeJS.ErrnoException) => resErrors.push(err.code ?? err.message));
      res.on('close', () => (responseClosed = true));
      res.writeHead(200);
      res.flushHeaders();
      copyBodyToH1(src, res);
    });
    const port = await listen(server);
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port }, () => {
        req.destroy();
        resolve();
      });
      req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
      req.end();
    });
    await until(() => responseClosed);
    src.write('after the caller left');
    src.end('and the end');
    await until(() => srcEnded);
    await new Promise((r) => setTimeout(r, 50));
    expect(resErrors).toEqual([]);
  });
});
