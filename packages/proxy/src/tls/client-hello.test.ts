import { describe, expect, it } from 'vitest';
import { createServer, type AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import { parseClientHello } from './client-hello.js';

/** Captures the first bytes a real node:tls client sends (its ClientHello). */
async function captureClientHello(opts: { servername?: string; ALPNProtocols?: string[] }): Promise<Buffer> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  const got = new Promise<Buffer>((resolve) =>
    server.once('connection', (s) => {
      let buf = Buffer.alloc(0);
      s.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        if (parseClientHello(buf) !== 'more') {
          resolve(buf);
          s.destroy();
        }
      });
    }),
  );
  const c = connect({
    host: '127.0.0.1',
    port,
    servername: opts.servername,
    ALPNProtocols: opts.ALPNProtocols,
    rejectUnauthorized: false,
  });
  c.on('error', () => undefined);
  const hello = await got;
  c.destroy();
  server.close();
  return hello;
}

describe('parseClientHello', () => {
  it('reads the SNI and ALPN of a real node:tls ClientHello', async () => {
    const hello = await captureClientHello({
      servername: 'web.default.serviceaccount.identity.minimesh.cluster.local',
      ALPNProtocols: ['h2', 'http/1.1'],
    });
    expect(parseClientHello(hello)).toEqual({
      kind: 'tls',
      sni: 'web.default.serviceaccount.identity.minimesh.cluster.local',
      alpn: ['h2', 'http/1.1'],
    });
  });

  it('asks for more bytes on every strict prefix of a ClientHello', async () => {
    const hello = await captureClientHello({ servername: 'a.b' });
    for (const n of [1, 3, 5, 10, 50, hello.length - 1]) expect(parseClientHello(hello.subarray(0, n))).toBe('more');
    expect(parseClientHello(hello)).toMatchObject({ kind: 'tls', sni: 'a.b' });
  });

  it('has no SNI when the client sends none (an IP address)', async () => {
    const hello = await captureClientHello({});
    expect(parseClientHello(hello)).toMatchObject({ kind: 'tls', sni: undefined });
  });

  it.each([['GET / HTTP/1.1\r\n'], ['PRI * HTTP/2.0'], ['\x16\x01\x00'], ['\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00']])(
    '%j is not TLS',
    (text) => {
      expect(parseClientHello(Buffer.from(text, 'latin1'))).toEqual({ kind: 'not-tls' });
    },
  );

  it('reads a ClientHello fragmented over several TLS records, whatever the record size', async () => {
    const hello = await captureClientHello({ servername: 'api.partner.example', ALPNProtocols: ['h2'] });
    for (const size of [1, 2, 3, 7, 64, 100, 511]) {
      const split = fragment(hello, size);
      expect(parseClientHello(split), `records of ${size}`).toEqual({
        kind: 'tls',
        sni: 'api.partner.example',
        alpn: ['h2'],
      });
      // ... and as it arrives, byte by byte: 'more' until the last byte.
      for (let n = 1; n < split.length; n += Math.max(1, Math.floor(split.length / 97)))
        expect(parseClientHello(split.subarray(0, n))).toBe('more');
    }
  });

  it('a handshake record followed by another record type mid-hello is not TLS', async () => {
    const hello = await captureClientHello({ servername: 'a.example' });
    const split = fragment(hello, 40);
    const bad = Buffer.from(split);
    bad[45] = 0x17; // the second record's type: application data
    expect(parseClientHello(bad)).toEqual({ kind: 'not-tls' });
  });

  it('a server name that is not a DNS name counts as none; the first host_name counts', () => {
    for (const name of ['203.0.113.10', 'bad name.example', 'a..b', '-'.repeat(64) + '.x', 'caf\xe9.example', ''])
      expect(parseClientHello(hello([name])), name).toMatchObject({ kind: 'tls', sni: undefined });
    expect(parseClientHello(hello(['Api.Partner.Example.']))).toMatchObject({ sni: 'Api.Partner.Example.' });
    expect(parseClientHello(hello(['first.example', 'second.example']))).toMatchObject({ sni: 'first.example' });
  });

  it('lengths that overrun their container, or a hello over 64 KiB, are not TLS', () => {
    const good = hello(['a.example']);
    // The extensions' total length one byte too long (the record then ends early).
    const extLenAt = 5 + 4 + 2 + 32 + 1 + 4 + 2;
    const over = Buffer.from(good);
    over.writeUInt16BE(over.readUInt16BE(extLenAt) + 1, extLenAt);
    expect(parseClientHello(over)).toEqual({ kind: 'not-tls' });
    const huge = Buffer.from(good);
    huge.writeUIntBE(0x10000, 6, 3);
    expect(parseClientHello(huge)).toEqual({ kind: 'not-tls' });
    expect(parseClientHello(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x00]))).toEqual({ kind: 'not-tls' });
    expect(parseClientHello(Buffer.from([0x16, 0x03, 0x04]))).toEqual({ kind: 'not-tls' });
  });

  it('garbage never throws and never hangs: random bytes, and every one-byte change of a real hello', async () => {
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / (1 << 24);
    for (let i = 0; i < 2000; i++) {
      const b = Buffer.alloc(1 + Math.floor(rand() * 600));
      for (let j = 0; j < b.length; j++) b[j] = Math.floor(rand() * 256);
      if (i % 2 === 0) b.set([0x16, 0x03, 0x01], 0); // past the record header, into the hello
      const r = parseClientHello(b);
      expect(r === 'more' || r.kind === 'tls' || r.kind === 'not-tls').toBe(true);
    }
    const real = await captureClientHello({ servername: 'api.partner.example' });
    for (let i = 0; i < real.length; i++) {
      const b = Buffer.from(real);
      b[i] = b[i]! ^ 0xff;
      const r = parseClientHello(b);
      expect(r === 'more' || r.kind === 'tls' || r.kind === 'not-tls').toBe(true);
      if (r !== 'more' && r.kind === 'tls' && r.sni !== undefined) expect(r.sni).toMatch(/^[A-Za-z0-9_.-]+$/);
    }
  });
});

/** The same handshake bytes in TLS records of at most `size` bytes each. */
function fragment(hello: Buffer, size: number): Buffer {
  const body = hello.subarray(5, 5 + hello.readUInt16BE(3));
  const out: Buffer[] = [];
  for (let i = 0; i < body.length; i += size) {
    const part = body.subarray(i, i + size);
    const head = Buffer.from([0x16, 0x03, 0x01, 0, 0]);
    head.writeUInt16BE(part.length, 3);
    out.push(head, part);
  }
  return Buffer.concat(out);
}

/** A minimal ClientHello (one record) with these host_name entries in its server_name extension. */
function hello(names: string[]): Buffer {
  const entries = Buffer.concat(
    names.map((n) => {
      const b = Buffer.from(n, 'latin1');
      const e = Buffer.alloc(3 + b.length);
      e[0] = 0;
      e.writeUInt16BE(b.length, 1);
      b.copy(e, 3);
      return e;
    }),
  );
  const list = Buffer.alloc(2 + entries.length);
  list.writeUInt16BE(entries.length, 0);
  entries.copy(list, 2);
  const ext = Buffer.alloc(4 + list.length);
  ext.writeUInt16BE(0, 0);
  ext.writeUInt16BE(list.length, 2);
  list.copy(ext, 4);
  const exts = Buffer.alloc(2 + ext.length);
  exts.writeUInt16BE(ext.length, 0);
  ext.copy(exts, 2);
  const body = Buffer.concat([
    Buffer.from([0x03, 0x03]),
    Buffer.alloc(32, 7),
    Buffer.from([0]), // session id
    Buffer.from([0, 2, 0x13, 0x01]), // one cipher suite
    Buffer.from([1, 0]), // null compression
    exts,
  ]);
  const hs = Buffer.alloc(4 + body.length);
  hs[0] = 1;
  hs.writeUIntBE(body.length, 1, 3);
  body.copy(hs, 4);
  const rec = Buffer.from([0x16, 0x03, 0x01, 0, 0]);
  rec.writeUInt16BE(hs.length, 3);
  return Buffer.concat([rec, hs]);
}
