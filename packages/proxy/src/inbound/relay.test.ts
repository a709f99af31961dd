// The inbound relay (the end of the opaque chain) against real TCP on loopback: to the app's port, the
// bytes detection read first; a refused connect is counted and the client's connection reset.
import { connect, createServer } from 'node:net';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ProxyMetrics } from '../metrics/metrics.js';
import { inboundConn } from '../../test/support/stages.js';
import { closedPort, ending, listen, socketPair, until } from '../../test/support/loopback.js';
import type { Endpoint } from '../targets.js';
import { AppEndpoints } from '../transport/app.js';
import { relayToApp } from './relay.js';

/** Relays the proxy side of a new client connection to the app on `appPort`, with `prefix` read already. */
async function relayTo(appPort: number, prefix: string) {
  const metrics = new ProxyMetrics(new Registry());
  const connector = { stream: (ep: Endpoint) => connect(ep.port, ep.ip) };
  const { client, accepted } = await socketPair();
  void relayToApp({ connector, metrics, app: new AppEndpoints() })({
    kind: 'opaque',
    parent: inboundConn(appPort),
    socket: accepted,
    prefix: Buffer.from(prefix),
  });
  return { client, metrics };
}

describe('inbound relay', () => {
  it("relays to the app's port, the bytes detection read first", async () => {
    const { client } = await relayTo(await listen(createServer((s) => s.pipe(s))), 'HELO ');
    client.write('there');
    let got = '';
    client.on('data', (c: Buffer) => (got += c.toString()));
    await until(() => got.length >= 10);
    expect(got).toBe('HELO there');
  });

  it('a refused connect to the app is counted and the connection reset', async () => {
    const { client, metrics } = await relayTo(await closedPort(), '');
    expect(await ending(client)).toBe('ECONNRESET');
    expect(await metrics.registry.metrics()).toContain(
      'proxy_errors_total{direction="inbound",error="MINIMESH_PROXY_CONNECT_REFUSED"} 1',
    );
  });
});
