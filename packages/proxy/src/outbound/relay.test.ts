// The outbound relay (the end of the opaque chain) against real TCP on loopback: the bytes detection read
// go first, then both ways; the endpoint connection is counted; a refused connect resets the app's.
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ProxyMetrics } from '../metrics/metrics.js';
import { OutboundLabels } from '../metrics/traffic-labels.js';
import { tcpStream } from '../tcp/stream.js';
import { plainEndpoint, type Balanced, type Endpoint } from '../targets.js';
import { relayTcp } from './relay.js';

const log = createLogger({ name: 'test', level: 'silent' });
const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

function listen(server: Server): Promise<number> {
  closers.push(() => server.close());
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)));
}

/** The app's side of a connection to the proxy, and the proxy's side of it. */
async function appConnection(): Promise<{ app: Socket; proxySide: Socket }> {
  const server = createServer();
  const port = await listen(server);
  const proxySide = new Promise<Socket>((r) => server.once('connection', r));
  const app = connect(port, '127.0.0.1');
  closers.push(() => app.destroy());
  return { app, proxySide: await proxySide };
}

function relayTo(ep: Endpoint, metrics: ProxyMetrics) {
  const connector = { meshIdentity: () => undefined, stream: (e: Endpoint) => connect(e.port, e.ip) };
  return relayTcp({ connector, labels: new OutboundLabels(), metrics, log });
}

describe('outbound relay', () => {
  it('writes the detected bytes first, then relays both ways, counting the endpoint connection', async () => {
    const echo = createServer((s) => s.pipe(s));
    const ep = plainEndpoint('127.0.0.1', await listen(echo));
    const metrics = new ProxyMetrics(new Registry());
    const { app, proxySide } = await appConnection();
    const target: Balanced = { concrete: { kind: 'forward', authority: ep.key, endpoint: ep }, endpoint: ep };
    relayTo(ep, metrics)(
      target,
      tcpStream(
        { kind: 'opaque', parent: undefined, socket: proxySide, prefix: Buffer.from('PING ') },
        'outbound',
        metrics,
      ),
    );
    app.write('and more');
    let got = '';
    app.on('data', (c: Buffer) => (got += c.toString()));
    for (let i = 0; i < 50 && got.length < 13; i++) await new Promise((r) => setTimeout(r, 10));
    expect(got).toBe('PING and more');
    const text = await metrics.registry.metrics();
    expect(text).toMatch(new RegExp(`tcp_open_total\\{[^}]*target_addr="${ep.key}"[^}]*peer="dst"[^}]*\\} 1`));
  });

  it('a refused connect is counted and the app connection reset', async () => {
    const closed = createServer();
    const ep = plainEndpoint('127.0.0.1', await listen(closed));
    closed.close();
    const metrics = new ProxyMetrics(new Registry());
    const { app, proxySide } = await appConnection();
    const ended = new Promise<string>((r) => {
      app.on('error', (err: NodeJS.ErrnoException) => r(err.code ?? 'error'));
      app.on('close', () => r('close'));
    });
    const target: Balanced = { concrete: { kind: 'forward', authority: ep.key, endpoint: ep }, endpoint: ep };
    relayTo(ep, metrics)(
      target,
      tcpStream({ kind: 'opaque', parent: undefined, socket: proxySide, prefix: Buffer.alloc(0) }, 'outbound', metrics),
    );
    expect(await ended).toBe('ECONNRESET');
    expect(await metrics.registry.metrics()).toMatch(
      /proxy_errors_total\{direction="outbound",error="MINIMESH_PROXY_CONNECT_REFUSED"\} 1/,
    );
  });
});
