// The engine's server role against node:http2's client (a second implementation) and against raw
// frames written with the codec where a client would not break the rules on its own.
import { afterEach, describe, expect, it } from 'vitest';
import { connect as netConnect, createServer, type Server, type Socket } from 'node:net';
import { connect as h2connect, constants as c, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { once } from 'node:events';
import {
  CLIENT_PREFACE,
  ErrorCode,
  Flag,
  FrameReader,
  FrameType,
  dataFrame,
  headersFrames,
  rstStreamFrame,
  settingsAckFrame,
  settingsFrame,
  type Frame,
  frame,
  pingFrame,
} from './frames.js';
import { HpackEncoder } from './hpack.js';
import { serveHttp2, type H2ServerOptions, type ServerStream } from './server.js';

type Handler = (stream: ServerStream, headers: IncomingHttpHeaders) => void;

const servers: Server[] = [];
const clients: ClientHttp2Session[] = [];

afterEach(() => {
  for (const c of clients.splice(0)) c.destroy();
  for (const s of servers.splice(0)) s.close();
});

async function listen(handler: Handler, opts: H2ServerOptions = {}): Promise<number> {
  const server = createServer((socket) => {
    serveHttp2(socket, opts, handler);
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

function client(port: number): ClientHttp2Session {
  const s = h2connect(`http://127.0.0.1:${port}`);
  s.on('error', () => undefined);
  clients.push(s);
  return s;
}

async function request(
  session: ClientHttp2Session,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer; trailers?: IncomingHttpHeaders }> {
  const req = session.request(headers, { endStream: body === undefined });
  if (body !== undefined) req.end(body);
  let trailers: IncomingHttpHeaders | undefined;
  req.on('trailers', (t) => (trailers = t));
  const [h] = (await once(req, 'response')) as [IncomingHttpHeaders];
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return { status: Number(h[':status']), headers: h, body: Buffer.concat(chunks), trailers };
}

const echo: Handler = (stream, headers) => {
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => {
    stream.respond({ ':status': 200, 'x-path': String(headers[':path']), 'x-method': String(headers[':method']) });
    stream.end(Buffer.concat(chunks));
  });
};

/** A raw client: the preface, our SETTINGS, then frames in; frames out collected. */
async function rawClient(port: number): Promise<{ socket: Socket; frames: Frame[]; closed: Promise<void> }> {
  const socket = netConnect(port, '127.0.0.1');
  await once(socket, 'connect');
  const frames: Frame[] = [];
  const reader = new FrameReader((f) => frames.push({ ...f, payload: Buffer.from(f.payload) }), {
    maxFrameSize: 1 << 24,
  });
  socket.on('data', (d: Buffer) => reader.push(d));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', () => undefined);
  socket.write(Buffer.concat([CLIENT_PREFACE, settingsFrame([])]));
  return { socket, frames, closed };
}

function get(path: string): string[] {
  return [':method', 'GET', ':scheme', 'http', ':authority', 'x', ':path', path];
}

const until = async (cond: () => boolean, ms = 2000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('h2 server engine', () => {
  it('answers requests, many at once, with the Date and the headers given', async () => {
    const port = await listen(echo);
    const s = client(port);
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) => request(s, { ':path': `/p${i}`, ':method': 'GET' })),
    );
    rs.forEach((r, i) => {
      expect(r.status).toBe(200);
      expect(r.headers['x-path']).toBe(`/p${i}`);
      expect(typeof r.headers.date).toBe('string');
    });
  });

  it('carries a 4 MiB body each way within the peer windows (node:http2 client: 64 KiB windows)', async () => {
    const port = await listen(echo);
    const body = Buffer.alloc(4 << 20);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 255;
    const r = await request(client(port), { ':path': '/big', ':method': 'POST' }, body);
    expect(r.status).toBe(200);
    expect(r.body.equals(body)).toBe(true);
  });

  it('sends trailers after the body when asked, and reads the request trailers', async () => {
    let requestTrailers: IncomingHttpHeaders | undefined;
    const port = await listen((stream) => {
      stream.on('trailers', (t: IncomingHttpHeaders) => (requestTrailers = t));
      stream.resume();
      stream.on('end', () => {
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': 'ok' }));
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.end(Buffer.from('hello'));
      });
    });
    const s = client(port);
    const req = s.request({ ':path': '/svc/M', ':method': 'POST' }, { waitForTrailers: true });
    req.on('wantTrailers', () => req.sendTrailers({ 'x-req-trailer': 'yes' }));
    req.end(Buffer.from('q'));
    let trailers: IncomingHttpHeaders | undefined;
    req.on('trailers', (t) => (trailers = t));
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('hello');
    expect(trailers?.['grpc-status']).toBe('0');
    expect(requestTrailers?.['x-req-trailer']).toBe('yes');
  });

  it('close() while trailers are awaited ends the response without them', async () => {
    const port = await listen((stream) => {
      stream.on('wantTrailers', () => stream.close());
      stream.respond({ ':status': 200 }, { waitForTrailers: true });
      stream.end('body');
    });
    const r = await request(client(port), { ':path': '/', ':method': 'GET' });
    expect(r.body.toString()).toBe('body');
    expect(r.trailers).toBeUndefined();
  });

  it("a client's reset closes the server stream with its code", async () => {
    let seen: ServerStream | undefined;
    const closed = new Promise<number | undefined>((resolve) => {
      void listen((stream) => {
        seen = stream;
        stream.on('close', () => resolve(stream.rstCode));
      }).then((port) => {
        const s = client(port);
        const req = s.request({ ':path': '/', ':method': 'POST' });
        req.write('partial');
        setTimeout(() => req.close(c.NGHTTP2_CANCEL), 50);
      });
    });
    expect(await closed).toBe(ErrorCode.CANCEL);
    expect(seen?.destroyed).toBe(true);
  });

  it('a reader that does not read stops the client at the stream window (1 MiB), then lets it go on', async () => {
    let stream: ServerStream | undefined;
    const port = await listen((s) => {
      stream = s;
      s.pause();
    });
    const s = client(port);
    const req = s.request({ ':path': '/', ':method': 'POST' });
    req.on('error', () => undefined);
    const chunk = Buffer.alloc(64 << 10);
    let sent = 0;
    const pump = () => {
      while (sent < 8 << 20 && req.write(chunk)) sent += chunk.length;
    };
    req.on('drain', () => {
      sent += chunk.length;
      pump();
    });
    pump();
    await until(() => stream !== undefined);
    await new Promise((r) => setTimeout(r, 300));
    const buffered = stream!.readableLength;
    expect(buffered).toBeLessThanOrEqual(1 << 20);
    expect(buffered).toBeGreaterThan(0);
    let read = 0;
    stream!.on('data', (c: Buffer) => (read += c.length));
    stream!.resume();
    await until(() => read >= 4 << 20, 5000);
    req.close();
  });

  it('resets a stream whose peer sends past its window (FLOW_CONTROL_ERROR), counting from the SETTINGS ack', async () => {
    // A 32 KiB stream window: until the client acknowledges it, the default 64 KiB may be in force for it.
    const port = await listen((s, h) => (h[':path'] === '/echo' ? echo(s, h) : s.pause()), { streamWindow: 32 << 10 });
    const raw = await rawClient(port);
    const enc = new HpackEncoder();
    const post = (id: number) => headersFrames(id, enc.encode([':method', 'POST', ...get('/').slice(2)]), false);
    const body = (id: number) => [0, 1, 2].map(() => dataFrame(id, Buffer.alloc(16 << 10)));
    // 48 KiB on stream 1 before the ack: within the default window, not a violation.
    raw.socket.write(Buffer.concat([post(1), ...body(1), settingsAckFrame()]));
    // 48 KiB on stream 3 after it: past the 32 KiB the client acknowledged, with nothing read.
    raw.socket.write(Buffer.concat([post(3), ...body(3)]));
    raw.socket.write(headersFrames(5, enc.encode(get('/echo')), true));
    await until(() => raw.frames.some((f) => f.type === FrameType.HEADERS && f.streamId === 5));
    const resets = raw.frames.filter((f) => f.type === FrameType.RST_STREAM);
    expect(resets.map((f) => [f.streamId, f.payload.readUInt32BE(0)])).toEqual([[3, ErrorCode.FLOW_CONTROL_ERROR]]);
    expect(raw.frames.some((f) => f.type === FrameType.GOAWAY)).toBe(false);
    raw.socket.destroy();
  });

  it('refuses streams beyond the concurrent streams it advertised', async () => {
    const port = await listen(() => undefined, { maxConcurrentStreams: 2 });
    const raw = await rawClient(port);
    const enc = new HpackEncoder();
    for (const id of [1, 3, 5]) raw.socket.write(headersFrames(id, enc.encode(get('/')), false));
    await until(() => raw.frames.some((f) => f.type === FrameType.RST_STREAM));
    const rst = raw.frames.find((f) => f.type === FrameType.RST_STREAM)!;
    expect(rst.streamId).toBe(5);
    expect(rst.payload.readUInt32BE(0)).toBe(ErrorCode.REFUSED_STREAM);
    raw.socket.destroy();
  });

  it('resets a malformed request (a connection-specific header) and keeps serving the connection', async () => {
    const port = await listen(echo);
    const raw = await rawClient(port);
    const enc = new HpackEncoder();
    raw.socket.write(headersFrames(1, enc.encode([...get('/bad'), 'connection', 'close']), true));
    raw.socket.write(headersFrames(3, enc.encode(get('/good')), true));
    await until(() => raw.frames.some((f) => f.type === FrameType.HEADERS && f.streamId === 3));
    const rst = raw.frames.find((f) => f.type === FrameType.RST_STREAM)!;
    expect(rst.streamId).toBe(1);
    expect(rst.payload.readUInt32BE(0)).toBe(ErrorCode.PROTOCOL_ERROR);
    raw.socket.destroy();
  });

  it('answers a header list over the advertised size with 431', async () => {
    const port = await listen(echo, { maxHeaderListSize: 1024 });
    const r = await request(client(port), { ':path': '/', ':method': 'GET', 'x-big': 'a'.repeat(2000) });
    expect(r.status).toBe(431);
  });

  it('ends a connection that opens and resets streams in a flood (GOAWAY ENHANCE_YOUR_CALM)', async () => {
    const port = await listen(() => undefined, { resetBurst: 20 });
    const raw = await rawClient(port);
    const enc = new HpackEncoder();
    const frames: Buffer[] = [];
    for (let id = 1; id < 200; id += 2)
      frames.push(headersFrames(id, enc.encode(get('/')), false), rstStreamFrame(id, ErrorCode.CANCEL));
    raw.socket.write(Buffer.concat(frames));
    await raw.closed;
    const goaway = raw.frames.find((f) => f.type === FrameType.GOAWAY)!;
    expect(goaway.payload.readUInt32BE(4)).toBe(ErrorCode.ENHANCE_YOUR_CALM);
  });

  it('ends a header block continued past twice the header-list limit (CONTINUATION flood)', async () => {
    const port = await listen(echo, { maxHeaderListSize: 1024 });
    const raw = await rawClient(port);
    const enc = new HpackEncoder();
    const first = headersFrames(1, enc.encode(get('/')), false);
    first[4] = first[4]! & ~Flag.END_HEADERS;
    const cont = frame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(512));
    raw.socket.write(Buffer.concat([first, ...Array.from({ length: 8 }, () => cont)]));
    await raw.closed;
    const goaway = raw.frames.find((f) => f.type === FrameType.GOAWAY)!;
    expect(goaway.payload.readUInt32BE(4)).toBe(ErrorCode.ENHANCE_YOUR_CALM);
  });

  it('drops a peer that floods PINGs and does not read the answers', async () => {
    const port = await listen(echo, { maxQueuedBytes: 256 << 10 });
    const raw = await rawClient(port);
    raw.socket.pause(); // reads nothing: the answers pile up in the kernel, then in the server's socket
    const ping = pingFrame(Buffer.alloc(8));
    const batch = Buffer.concat(Array.from({ length: 4096 }, () => ping));
    let closed = false;
    void raw.closed.then(() => (closed = true));
    for (let i = 0; i < 2000 && !closed; i++) {
      if (!raw.socket.write(batch)) await Promise.race([once(raw.socket, 'drain').catch(() => undefined), raw.closed]);
    }
    await raw.closed;
    expect(closed).toBe(true);
  });

  it('a connection error (DATA on stream 0) is answered with GOAWAY PROTOCOL_ERROR and the connection ends', async () => {
    const port = await listen(echo);
    const raw = await rawClient(port);
    raw.socket.write(frame(FrameType.DATA, 0, 0, Buffer.alloc(1)));
    await raw.closed;
    const goaway = raw.frames.find((f) => f.type === FrameType.GOAWAY)!;
    expect(goaway.payload.readUInt32BE(4)).toBe(ErrorCode.PROTOCOL_ERROR);
  });

  it('answers PING and acknowledges SETTINGS', async () => {
    const port = await listen(echo);
    const s = client(port);
    await once(s, 'remoteSettings');
    const rtt = await new Promise<number>((resolve, reject) => s.ping((err, ms) => (err ? reject(err) : resolve(ms))));
    expect(rtt).toBeGreaterThanOrEqual(0);
  });

  it('close() sends GOAWAY, lets open streams finish, then ends the connection', async () => {
    let session: { close(): void } | undefined;
    let pending: ServerStream | undefined;
    const server = createServer((socket) => {
      session = serveHttp2(socket, {}, (stream) => {
        pending = stream;
      });
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const s = client((server.address() as { port: number }).port);
    const req = s.request({ ':path': '/', ':method': 'GET' });
    await until(() => pending !== undefined);
    const goaway = once(s, 'goaway');
    session!.close();
    await goaway;
    pending!.respond({ ':status': 204 }, { endStream: true });
    const [h] = (await once(req, 'response')) as [IncomingHttpHeaders];
    expect(h[':status']).toBe(204);
    await once(s, 'close');
  });

  it('takes bytes read before the hand-over (detection) first', async () => {
    const server = createServer((socket) => {
      socket.once('data', (first: Buffer) => {
        socket.pause();
        serveHttp2(socket, {}, echo).receive(first);
      });
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const r = await request(client((server.address() as { port: number }).port), { ':path': '/x', ':method': 'GET' });
    expect(r.headers['x-path']).toBe('/x');
  });

  it('flags a request trailer block without END_STREAM as malformed', async () => {
    const port = await listen((stream) => stream.resume());
    const raw = await rawClient(port);
    const enc = new HpackEncoder();
    raw.socket.write(headersFrames(1, enc.encode([...get('/')].map((v, i) => (i === 1 ? 'POST' : v))), false));
    raw.socket.write(headersFrames(1, enc.encode(['x-t', '1']), false));
    await until(() => raw.frames.some((f) => f.type === FrameType.RST_STREAM));
    const rst = raw.frames.find((f) => f.type === FrameType.RST_STREAM)!;
    expect(rst.payload.readUInt32BE(0)).toBe(ErrorCode.PROTOCOL_ERROR);
    expect(raw.frames.some((f) => f.type === FrameType.SETTINGS && f.flags & Flag.ACK)).toBe(true);
    raw.socket.destroy();
  });
});
