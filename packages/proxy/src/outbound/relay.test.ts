// The outbound relay (the end of the opaque chain) against real TCP on loopback: the bytes detection read
// go first, then both ways; the endpoint connection is counted; a refused connect resets the app's.
import { connect, createServer } from 'node:net';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ProxyMetrics } from '../metrics/metrics.js';
import { OutboundLabels } from '../metrics/traffic-labels.js';
import { tcpStream } from '../tcp/stream.js';
import { plainEndpoint, type Endpoint } from '../targets.js';
import { closedPort, ending, listen, socketPair, until } from '../../test/support/loopback.js';
import { relayTcp } from './relay.js';

const log = createLogger({ name: 'test', level: 'silent' });

/** Relays the proxy side of a new app connection to `ep`, with `prefix` read already. */
async function relayTo(ep: Endpoint, prefix: string) {
  const metrics = new ProxyMetrics(new Registry());
  const connector = { meshIdentity: () => undefined, stream: (e: Endpoint) => connect(e.port, e.ip) };
  const { client: app, accepted } = await socketPair();
  const stream = tcpStream(
    { kind: 'opaque', parent: undefined, socket: accepted, prefix: Buffer.from(prefix) },
    'outbound',
    metrics,
  );
  relayTcp({ connector, labels: new OutboundLabels(), metrics, log })(
    { concrete: { kind: 'forward', authority: ep.key, endpoint: ep }, endpoint: ep },
    stream,
  );
  return { app, metrics };
}

describe('outbound relay', () => {
  it('writes the detected bytes first, then relays both ways, counting the endpoint connection', async () => {
    const ep = plainEndpoint('127.0.0.1', await listen(createServer((s) => s.pipe(s))));
    const { app, metrics } = await relayTo(ep, 'PING ');
    app.write('and more');
    let got = '';
    app.on('data', (c: Buffer) => (got += c.toString()));
    await until(() => got.length >= 13);
    expect(got).toBe('PING and more');
    expect(await metrics.registry.metrics()).toMatch(
      new RegExp(`tcp_open_total\\{[^}]*target_addr="${ep.key}"[^}]*peer="dst"[^}]*\\} 1`),
    );
  });

  it('a refused connect is counted and the app connection reset', async () => {
    const { app, metrics } = await relayTo(plainEndpoint('127.0.0.1', await closedPort()), '');
    expect(await ending(app)).toBe('ECONNRESET');
    expect(await metrics.registry.metrics()).toMatch(
      /proxy_errors_total\{direction="outbound",error="MINIMESH_PROXY_CONNECT_REFUSED"\} 1/,
    );
  });
});
