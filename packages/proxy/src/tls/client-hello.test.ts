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
});
