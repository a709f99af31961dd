import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { detectProtocol } from './detect.js';

describe('detectProtocol', () => {
  it.each([
    ['PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'h2'],
    ['PRI * HTTP/2.0', 'h2'],
    ['PRI * HTT', 'more'],
    ['GET / HTTP/1.1\r\nHost: x\r\n\r\n', 'http1'],
    ['POST /api/v1?x=1 HTTP/1.0\r\n', 'http1'],
    ['OPTIONS * HTTP/1.1\r\n', 'http1'],
    ['GET / HTTP/1.1', 'more'],
    ['GET /', 'more'],
    ['G', 'more'],
    ['', 'more'],
    ['\x16\x03\x01\x02\x00\x01', 'opaque'],
    ['SSH-2.0-OpenSSH_9.0\r\n', 'opaque'],
    ['EHLO mail.example.com\r\n', 'opaque'],
    ['GET / SPDY/3\r\n', 'opaque'],
    ['\x00\x00\x00\x08\x04\xd2\x16\x2f', 'opaque'],
    ['hello raw tcp', 'opaque'],
    ['GET / HTTP', 'more'],
    ['GET / HTTP/1.', 'more'],
    ['GET / HTTP/2', 'opaque'],
    ['GET  /', 'opaque'],
  ])('%j → %s', (input, expected) => {
    expect(detectProtocol(Buffer.from(input, 'latin1'))).toBe(expected);
  });

  it('gives up (opaque) on a 1 KiB line without a request line end', () => {
    expect(detectProtocol(Buffer.from('GET /' + 'a'.repeat(2000)))).toBe('opaque');
  });
});

describe('peek after peek (the inbound TLS check, then protocol detection)', () => {
  it('decides on bytes given back by the first peek without waiting for the timeout', async () => {
    const { createServer, connect } = await import('node:net');
    const { peek, detect } = await import('./detect.js');
    const result = await new Promise<{ protocol: string; ms: number }>((resolve, reject) => {
      const peekTwice = async (sock: Socket) => {
        const t0 = Date.now();
        const first = await peek(sock, (b) => (b.length > 0 ? 'seen' : 'more'), 5000, 'timeout');
        sock.unshift(first.prefix);
        const d = await detect(sock, 5000);
        resolve({ protocol: d.protocol, ms: Date.now() - t0 });
        sock.destroy();
        srv.close();
      };
      const srv = createServer((sock) => void peekTwice(sock).catch(reject));
      srv.listen(0, '127.0.0.1', () => {
        const c = connect((srv.address() as { port: number }).port, '127.0.0.1', () =>
          c.write('GET /live HTTP/1.1\r\nHost: x\r\n\r\n'),
        );
        c.on('error', () => undefined);
      });
    });
    expect(result.protocol).toBe('http1');
    expect(result.ms).toBeLessThan(1000);
  });
});
