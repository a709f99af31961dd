// The SNI detection stage against real connections on loopback: a node:tls client's ClientHello is read
// (not terminated) and handed on whole with its server name, also when part of it was read already;
// plaintext, a ClientHello without a server name, and silence until the timeout are refused (reset).
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { createLogger } from '@minimesh/runtime';
import { describe, expect, it } from 'vitest';
import type { CompiledOutboundPolicy } from '@minimesh/policy/client';
import { ending, socketPair, until } from '../../test/support/loopback.js';
import { toAddr, type Accept, type Sni, type TlsConn } from '../targets.js';
import { parseClientHello } from '../tls/client-hello.js';
import { pushDetectSni } from './detect-sni.js';

const log = createLogger({ name: 'test', level: 'silent' });
const POLICY: CompiledOutboundPolicy = {
  meta: { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside' },
  ref: { namespace: 'shop', section: '', port: 443 },
  protocol: 'tls',
  http1: [],
  http2: [],
  tls: [],
};

async function run(client: 'tls' | 'tls-no-sni' | 'plain' | 'silent', opts: { prefixBytes?: number } = {}) {
  const errors: string[] = [];
  const seen: Array<Sni<Accept>> = [];
  let tls: TLSSocket | undefined;
  const { client: c, accepted } = await socketPair((sock) => {
    if (client === 'plain') sock.write('GET / HTTP/1.1\r\nhost: a\r\n\r\n');
    else if (client !== 'silent')
      tls = tlsConnect({
        socket: sock,
        ...(client === 'tls' ? { servername: 'api.partner.example' } : {}),
        rejectUnauthorized: false,
      }).on('error', () => undefined);
  });
  const resets: string[] = [];
  const reset = accepted.resetAndDestroy.bind(accepted);
  accepted.resetAndDestroy = () => (resets.push('reset'), reset());
  // What an earlier stage (detection) may have read already.
  let prefix = Buffer.alloc(0);
  if (opts.prefixBytes) {
    accepted.pause();
    await until(() => accepted.readableLength >= opts.prefixBytes!);
    prefix = Buffer.from(accepted.read(opts.prefixBytes) as Buffer);
  }
  const t: TlsConn<Accept> = {
    parent: { direction: 'outbound', socket: accepted, orig: toAddr('203.0.113.10', 443) },
    socket: accepted,
    prefix,
    policy: POLICY,
  };
  const ended = ending(c);
  await pushDetectSni({ timeoutMs: 300, error: (code) => errors.push(code), log })((x) => void seen.push(x))(t);
  return { seen, errors, ended, accepted, resets, tls };
}

describe('outbound SNI detection', () => {
  it.each([0, 7])('hands on the whole ClientHello and its server name (%i bytes read before)', async (prefixBytes) => {
    const { seen, errors, accepted } = await run('tls', { prefixBytes });
    expect(errors).toEqual([]);
    expect(seen.map((s) => [s.sni, s.policy, s.socket === accepted])).toEqual([['api.partner.example', POLICY, true]]);
    expect(parseClientHello(seen[0]!.prefix)).toMatchObject({ kind: 'tls', sni: 'api.partner.example' });
    expect(accepted.destroyed).toBe(false);
  });

  it.each([
    ['plain', 'plaintext'],
    ['tls-no-sni', 'a ClientHello without a server name'],
    ['silent', 'nothing before the timeout'],
  ] as const)('%s (%s) is refused with a reset', async (client, _what) => {
    const { seen, errors, ended, resets, tls } = await run(client);
    expect(seen).toEqual([]);
    expect(errors).toEqual(['MINIMESH_PROXY_ROUTE_NOT_FOUND']);
    expect(resets).toEqual(['reset']);
    // (A TLS client reads through its TLSSocket, which reports the reset as a close.)
    if (tls === undefined) expect(await ended).toBe('ECONNRESET');
  });
});
