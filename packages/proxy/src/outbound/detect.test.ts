// The outbound detect stage on real loopback connections, with a fake profile lookup and next stages:
// HTTP goes to the HTTP server, anything else (or a port configured or profiled opaque) to the opaque
// chain with the bytes read so far.
import { parsePortRanges } from '@minimesh/config';
import { describe, expect, it } from 'vitest';
import type { Profile } from '../destination/resolver.js';
import { toAddr, type Accept, type Detected } from '../targets.js';
import { acceptedSending } from '../../test/support/loopback.js';
import { pushDetect } from './detect.js';

async function accepted(port: number, send: string): Promise<Accept> {
  return { direction: 'outbound', socket: await acceptedSending(send), orig: toAddr('10.96.0.10', port) };
}

async function detect(port: number, send: string, profile?: Partial<Profile>): Promise<string> {
  const seen: string[] = [];
  const handler = pushDetect({
    resolver: {
      profile: async () =>
        profile ? { fullyQualifiedName: '', endpoint: undefined, opaqueProtocol: false, ...profile } : undefined,
    },
    opaquePorts: parsePortRanges('test', '5432'),
    timeoutMs: 200,
  })({
    http: (t) => void seen.push(`http ${t.protocol} ${t.prefix.toString()}`),
    opaque: (t: Detected<Accept>) => void seen.push(`opaque ${t.prefix.toString()}`),
  });
  await handler(await accepted(port, send));
  return seen.join(';');
}

describe('outbound detect', () => {
  it('an HTTP/1 request goes to the HTTP server with the bytes detection read', async () => {
    expect(await detect(80, 'GET / HTTP/1.1\r\nhost: web\r\n\r\n')).toBe(
      'http http1 GET / HTTP/1.1\r\nhost: web\r\n\r\n',
    );
  });

  it('bytes that are not HTTP go to the opaque chain', async () => {
    expect(await detect(80, '\x00\x01binary')).toBe('opaque \x00\x01binary');
  });

  it('a configured opaque port, and one the profile marks opaque, skip detection', async () => {
    expect(await detect(5432, 'GET / HTTP/1.1\r\n\r\n')).toBe('opaque ');
    expect(await detect(80, 'GET / HTTP/1.1\r\n\r\n', { opaqueProtocol: true })).toBe('opaque ');
  });
});
