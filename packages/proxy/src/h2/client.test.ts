// The engine's client role against node:http2's server (a second implementation), against the engine's
// own server, and against raw frames where a server would not misbehave on its own.
import { afterEach, describe, expect, it } from 'vitest';
import {
  connect as netConnect,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import {
  createServer as createH2Server,
  constants as c,
  type Http2Server,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { once } from 'node:events';
import {
  ErrorCode,
  FrameReader,
  FrameType,
  goawayFrame,
  headersFrames,
  settingsFrame,
  Setting,
  type Frame,
} from './frames.js';
import { HpackEncoder } from './hpack.js';
import { connectHttp2, type ClientStream, type H2ClientSession } from './client.js';
import { serveHttp2 } from './server.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

async function nodeServer(
  handler: (s: ServerHttp2Stream, h: IncomingHttpHeaders) => void,
  settings = {},
): Promise<number> {
  const server: Http2Server = createH2Server({ settings });
  server.on('stream', handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(() => server.close());
  return (server.address() as { port: number }).port;
}

function session(port: number): H2ClientSession {
  const s = connectHttp2(netConnect(port, '127.0.0.1'), { authority: `127.0.0.1:${port}` });
  s.on('error', () => undefined);
  closers.push(() => s.destroy());
  return s;
}

async function response(
  req: ClientStream,
): Promise<{ head: IncomingHttpHeaders; body: Buffer; trailers?: IncomingHttpHeaders }> {
  let trailers: IncomingHttpHeaders | undefined;
  req.on('trailers', (t: IncomingHttpHeaders) => (trailers = t));
  const [head] = (await once(req, 'response')) as [IncomingHttpHeaders];
  const chunks: Buffer[] = [];
  for await (const ch of req) chunks.push(ch as Buffer);
  return { head, body: Buffer.concat(chunks), trailers };
}

const echo = (s: ServerHttp2Stream, h: IncomingHttpHeaders) => {
  const chunks: Buffer[] = [];
  s.on('data', (d: Buffer) => chunks.push(d));
  s.on('end', () => {
    s.respond({ ':status': 200, 'x-path': String(h[':path']), 'x-authority': String(h[':authority']) });
    s.end(Buffer.concat(chunks));
  });
};

describe('h2 client engine', () => {
  it('sends requests and reads responses (node:http2 server), many at once, :status a number', async () => {
    const port = await nodeServer(echo);
    const s = session(port);
    const rs = await Promise.all(
      Array.from({ length: 40 }, (_, i) => response(s.request({ ':path': `/r${i}` }, { endStream: true }))),
    );
    rs.forEach((r, i) => {
      expect(r.head[':status']).toBe(200);
      expect(r.head['x-path']).toBe(`/r${i}`);
      expect(r.head['x-authority']).toBe(`127.0.0.1:${port}`);
    });
  });

  it('carries a 4 MiB body each way, against its own server engine', async () => {
    const server = createNetServer((sock) =>
      serveHttp2(sock, {}, (stream) => {
        const chunks: Buffer[] = [];
        stream.on('data', (d: Buffer) => chunks.push(d));
        stream.on('end', () => {
          stream.respond({ ':status': 200 });
          stream.end(Buffer.concat(chunks));
        });
      }),
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => server.close());
    const s = session((server.address() as { port: number }).port);
    const body = Buffer.alloc(4 << 20);
    for (let i = 0; i < body.length; i++) body[i] = (i * 13) & 255;
    const req = s.request({ ':method': 'POST', ':path': '/' });
    req.end(body);
    const r = await response(req);
    expect(r.body.equals(body)).toBe(true);
  });

  it('reads trailers, and a trailers-only response ends at its head', async () => {
    const port = await nodeServer((st, h) => {
      if (h[':path'] === '/only') return st.respond({ ':status': 200, 'grpc-status': '5' }, { endStream: true });
      st.on('wantTrailers', () => st.sendTrailers({ 'grpc-status': '0' }));
      st.respond({ ':status': 200 }, { waitForTrailers: true });
      st.end('x');
    });
    const s = session(port);
    const full = await response(s.request({ ':path': '/full' }, { endStream: true }));
    expect(full.body.toString()).toBe('x');
    expect(full.trailers?.['grpc-status']).toBe('0');
    const only = s.request({ ':path': '/only' }, { endStream: true });
    const [head, flags] = (await once(only, 'response')) as [IncomingHttpHeaders, number];
    expect(head['grpc-status']).toBe('5');
    expect(flags & c.NGHTTP2_FLAG_END_STREAM).toBeTruthy();
  });

  it('a reset by the server fails the stream with its code', async () => {
    const port = await nodeServer((st) => {
      st.on('error', () => undefined); // node:http2 emits its own reset as an error
      st.close(c.NGHTTP2_REFUSED_STREAM);
    });
    const s = session(port);
    const req = s.request({ ':path': '/' }, { endStream: true });
    const [err] = (await once(req, 'error')) as [Error];
    expect(err.message).toMatch(/REFUSED_STREAM/);
    expect(req.rstCode).toBe(ErrorCode.REFUSED_STREAM);
  });

  it('a response cut short by CANCEL fails; CANCEL after a whole response leaves it whole', async () => {
    // The own server's close(CANCEL) sends RST_STREAM alone (node:http2's would end the stream first).
    const own = createNetServer((sock) =>
      serveHttp2(sock, {}, (st, h) => {
        st.respond({ ':status': 200 });
        if (h[':path'] === '/cut') st.write('part');
        else st.end('whole'); // then CANCEL stops the request body still coming
        setTimeout(() => st.close(c.NGHTTP2_CANCEL), 20);
      }),
    );
    own.listen(0, '127.0.0.1');
    await once(own, 'listening');
    closers.push(() => own.close());
    const s = session((own.address() as { port: number }).port);
    const cut = s.request({ ':path': '/cut', ':method': 'POST' });
    cut.write('x');
    const [err] = (await once(cut, 'error')) as [Error];
    expect(err.message).toMatch(/CANCEL/);
    const whole = s.request({ ':path': '/whole', ':method': 'POST' });
    whole.on('error', () => undefined);
    whole.write('x');
    await once(whole, 'response');
    await new Promise((r) => setTimeout(r, 60));
    expect(whole.rstCode).toBe(c.NGHTTP2_CANCEL);
    const chunks: Buffer[] = [];
    for await (const ch of whole) chunks.push(ch as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('whole');
  });

  it("waits for a slot beyond the server's SETTINGS_MAX_CONCURRENT_STREAMS rather than being refused", async () => {
    let open = 0;
    let most = 0;
    const port = await nodeServer(
      (st) => {
        open++;
        most = Math.max(most, open);
        setTimeout(() => {
          open--;
          st.respond({ ':status': 204 }, { endStream: true });
        }, 20);
      },
      { maxConcurrentStreams: 2 },
    );
    const s = session(port);
    await once(s, 'connect');
    await new Promise((r) => setTimeout(r, 50)); // the server's SETTINGS
    const rs = await Promise.all(
      Array.from({ length: 8 }, () => response(s.request({ ':path': '/' }, { endStream: true }))),
    );
    expect(rs.every((r) => Number(r.head[':status']) === 204)).toBe(true);
    expect(most).toBeLessThanOrEqual(2);
  });

  it('GOAWAY refuses the streams the server did not take and the session takes no more', async () => {
    // A raw server: takes stream 1, then GOAWAY naming 1 as the last.
    let sock: Socket | undefined;
    const frames: Frame[] = [];
    const server: NetServer = createNetServer((s) => {
      sock = s;
      const reader = new FrameReader((f) => frames.push(f), { preface: true });
      s.on('data', (d: Buffer) => reader.push(d));
      s.write(settingsFrame([[Setting.MAX_CONCURRENT_STREAMS, 100]]));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => server.close());
    const s = session((server.address() as { port: number }).port);
    const r1 = s.request({ ':path': '/1' }, { endStream: true });
    const r3 = s.request({ ':path': '/3' }, { endStream: true });
    const e3 = once(r3, 'error');
    const until = Date.now() + 2000;
    while (frames.filter((f) => f.type === FrameType.HEADERS).length < 2 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 5));
    sock!.write(goawayFrame(1, ErrorCode.NO_ERROR));
    const [err] = (await e3) as [Error];
    expect(err.message).toMatch(/REFUSED_STREAM/);
    expect(() => s.request({ ':path': '/5' })).toThrow(/GOAWAY/);
    const enc = new HpackEncoder();
    sock!.write(headersFrames(1, enc.encode([':status', '200']), true));
    const [head] = (await once(r1, 'response')) as [IncomingHttpHeaders];
    expect(head[':status']).toBe(200);
  });

  it('a connection that fails fails its streams with the cause', async () => {
    const server = createNetServer((s) => s.destroy());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => server.close());
    const s = session((server.address() as { port: number }).port);
    const req = s.request({ ':path': '/' }, { endStream: true });
    const [err] = (await once(req, 'error')) as [Error];
    expect(err.message).toMatch(/connection closed/);
    expect(s.destroyed).toBe(true);
  });

  it("answers the server's PING, and times out once idle", async () => {
    const server: Http2Server = createH2Server();
    server.on('stream', echo);
    const rtt = new Promise<number>((resolve, reject) =>
      server.on('session', (ss) =>
        ss.once('remoteSettings', () => ss.ping((err, ms) => (err ? reject(err) : resolve(ms)))),
      ),
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => server.close());
    const s = session((server.address() as { port: number }).port);
    let timedOut = false;
    s.setTimeout(100, () => (timedOut = true));
    await response(s.request({ ':path': '/' }, { endStream: true }));
    expect(await rtt).toBeGreaterThanOrEqual(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(timedOut).toBe(true);
  });
});
