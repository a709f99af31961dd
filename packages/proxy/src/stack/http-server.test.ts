// The HTTP server stage on real loopback connections with a fake next stage: every request of a
// connection detected as HTTP reaches the chain with the connection's target, an exchange for a
// request, an UpgradeExchange for an HTTP/1 Upgrade.
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { H1Exchange } from '../http/exchange.js';
import type { IncomingRequest } from '../http/handoff.js';
import { UpgradeExchange } from '../http/upgrade.js';
import { ProxyMetrics } from '../metrics/metrics.js';
import { pushHttpServer } from './http-server.js';
import { afterTest, socketPair, until } from '../../test/support/loopback.js';

const log = createLogger({ name: 'test', level: 'silent' });
/** A connection whose proxy side is served by the stage (as detection hands it over, prefix included). */
async function served(send: string, prefixLength: number) {
  const calls: Array<[string, IncomingRequest]> = [];
  const http = pushHttpServer<string>({
    sink: { direction: 'outbound', metrics: new ProxyMetrics(new Registry()), log },
    headerReadTimeoutMs: 5000,
  })((conn, req) => {
    calls.push([conn, req]);
    if (req.upgrade) req.socket.end('HTTP/1.1 200 not upgraded\r\ncontent-length: 0\r\n\r\n');
    else req.answer(200, 'seen', undefined);
  });
  afterTest(() => http.h1.close());
  const { client, accepted: socket } = await socketPair((c) => c.write(send));
  // What detection would have read: the first bytes, then handed over.
  const prefix = await new Promise<Buffer>((r) => socket.once('data', (c: Buffer) => (socket.pause(), r(c))));
  if (prefix.length > prefixLength) socket.unshift(prefix.subarray(prefixLength));
  http.serve({ kind: 'http', protocol: 'http1', parent: 'conn-1', socket, prefix: prefix.subarray(0, prefixLength) });
  let response = '';
  client.on('data', (c: Buffer) => (response += c.toString()));
  await until(() => response.includes('\r\n\r\n'));
  return { calls, response };
}

describe('HTTP server stage', () => {
  it("a request reaches the chain as an exchange, with its connection's target", async () => {
    const { calls, response } = await served('GET /a HTTP/1.1\r\nhost: web.shop:80\r\n\r\n', 64);
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    expect(calls).toHaveLength(1);
    expect(calls[0]![0]).toBe('conn-1');
    expect(calls[0]![1]).toBeInstanceOf(H1Exchange);
    expect(calls[0]![1]).toMatchObject({ authority: 'web.shop:80', method: 'GET', path: '/a', upgrade: false });
  });

  it('an HTTP/1 Upgrade reaches it as an UpgradeExchange', async () => {
    const { calls } = await served(
      'GET /ws HTTP/1.1\r\nhost: web.shop:80\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n',
      10,
    );
    expect(calls[0]![1]).toBeInstanceOf(UpgradeExchange);
    expect(calls[0]![1]).toMatchObject({ upgrade: true, path: '/ws', authority: 'web.shop:80' });
  });
});
