// The inbound detect stage on real loopback connections with fake next stages: HTTP to the HTTP server;
// TLS passed through, opaque ports and anything not HTTP to the opaque chain, with the bytes read so far.
import { describe, expect, it } from 'vitest';
import { acceptedSending } from '../../test/support/loopback.js';
import { inboundConn } from '../../test/support/stages.js';
import { pushDetect } from './detect.js';

async function detect(opts: { port?: number; send: string; prefix?: string; opaque?: boolean }): Promise<string> {
  const seen: string[] = [];
  const handler = pushDetect({ opaquePort: (p) => p === 5432, timeoutMs: 200 })({
    http: (t) => void seen.push(`http ${t.protocol} ${t.parent.orig.port} ${t.prefix.toString()}`),
    opaque: (t) => void seen.push(`opaque ${t.prefix.toString()}`),
  });
  await handler({
    parent: inboundConn(opts.port ?? 8080),
    socket: await acceptedSending(opts.send),
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
