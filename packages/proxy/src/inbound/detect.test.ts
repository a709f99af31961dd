// The inbound detect stage on real loopback connections with fake next stages: HTTP to the HTTP server;
// TLS passed through, opaque ports and anything not HTTP to the opaque chain, with the bytes read so far.
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { inboundConn } from '../../test/support/stages.js';
import { pushDetect } from './detect.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

async function socketSending(send: string): Promise<Socket> {
  const server: Server = createServer();
  closers.push(() => server.close());
  const port = await new Promise<number>((r) =>
    server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)),
  );
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const client = connect(port, '127.0.0.1', () => client.write(send));
  closers.push(() => client.destroy());
  const s = await accepted;
  closers.push(() => s.destroy());
  return s;
}

async function detect(opts: { port?: number; send: string; prefix?: string; opaque?: boolean }): Promise<string> {
  const seen: string[] = [];
  const handler = pushDetect({ opaquePort: (p) => p === 5432, timeoutMs: 200 })({
    http: (t) => void seen.push(`http ${t.protocol} ${t.parent.orig.port} ${t.prefix.toString()}`),
    opaque: (t) => void seen.push(`opaque ${t.prefix.toString()}`),
  });
  await handler({
    parent: inboundConn(opts.port ?? 8080),
    socket: await socketSending(opts.send),
    prefix: Buffer.from(opts.prefix ?? ''),
    opaque: opts.opaque ?? false,
  });
  return seen.join(';');
}

describe('inbound detect', () => {
  it("HTTP/2 and HTTP/1 go to the HTTP server, with every byte read so far (the TLS peek's too)", async () => {
    expect(await detect({ send: 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' })).toMatch(/^http h2 8080 PRI \* HTTP\/2\.0/);
    expect(await detect({ prefix: 'GET / HT', send: 'TP/1.1\r\n\r\n' })).toBe('http http1 8080 GET / HTTP/1.1\r\n\r\n');
  });

  it('TLS passed through, an opaque port and bytes that are not HTTP go to the opaque chain', async () => {
    expect(await detect({ prefix: '\x16\x03\x01', send: 'rest', opaque: true })).toBe('opaque \x16\x03\x01');
    expect(await detect({ port: 5432, send: 'GET / HTTP/1.1\r\n\r\n' })).toBe('opaque ');
    expect(await detect({ send: '\x00binary' })).toBe('opaque \x00binary');
  });
});
