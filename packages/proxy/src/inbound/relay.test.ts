// The inbound relay (the end of the opaque chain) against real TCP on loopback: to the app's port, the
// bytes detection read first; a refused connect is counted and the client's connection reset.
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ProxyMetrics } from '../metrics/metrics.js';
import { inboundConn } from '../../test/support/stages.js';
import type { Endpoint } from '../targets.js';
import { AppEndpoints } from '../transport/app.js';
import { relayToApp } from './relay.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

function listen(server: Server): Promise<number> {
  closers.push(() => server.close());
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)));
}

async function clientConnection(): Promise<{ client: Socket; proxySide: Socket }> {
  const server = createServer();
  const port = await listen(server);
  const proxySide = new Promise<Socket>((r) => server.once('connection', r));
  const client = connect(port, '127.0.0.1');
  closers.push(() => client.destroy());
  return { client, proxySide: await proxySide };
}

function relay(metrics: ProxyMetrics) {
  const connector = { stream: (ep: Endpoint) => connect(ep.port, ep.ip) };
  return relayToApp({ connector, metrics, app: new AppEndpoints() });
}

describe('inbound relay', () => {
  it("relays to the app's port, the bytes detection read first", async () => {
    const appPort = await listen(createServer((s) => s.pipe(s)));
    const metrics = new ProxyMetrics(new Registry());
    const { client, proxySide } = await clientConnection();
    void relay(metrics)({
      kind: 'opaque',
      parent: inboundConn(appPort),
      socket: proxySide,
      prefix: Buffer.from('HELO '),
    });
    client.write('there');
    let got = '';
    client.on('data', (c: Buffer) => (got += c.toString()));
    for (let i = 0; i < 50 && got.length < 10; i++) await new Promise((r) => setTimeout(r, 10));
    expect(got).toBe('HELO there');
  });

  it('a refused connect to the app is counted and the connection reset', async () => {
    const closed = createServer();
    const appPort = await listen(closed);
    closed.close();
    const metrics = new ProxyMetrics(new Registry());
    const { client, proxySide } = await clientConnection();
    const ended = new Promise<string>((r) => {
      client.on('error', (err: NodeJS.ErrnoException) => r(err.code ?? 'error'));
      client.on('close', () => r('close'));
    });
    void relay(metrics)({ kind: 'opaque', parent: inboundConn(appPort), socket: proxySide, prefix: Buffer.alloc(0) });
    expect(await ended).toBe('ECONNRESET');
    expect(await metrics.registry.metrics()).toContain(
      'proxy_errors_total{direction="inbound",error="MINIMESH_PROXY_CONNECT_REFUSED"} 1',
    );
  });
});
