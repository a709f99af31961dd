// An HTTP/1 Upgrade (a real caller and a real app on loopback): forward() replays the request head to
// the connect stage's raw connection, the mesh's headers left out where a stage said so and extra ones
// added, then relays bytes both ways; a failed connect is answered with an HTTP error response.
import { createServer, request } from 'node:http';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ProxyMetrics, toLabels } from '../metrics/metrics.js';
import { plainEndpoint } from '../targets.js';
import { isMeshRequestHeader } from './headers.js';
import { UpgradeExchange } from './upgrade.js';
import { afterTest, listen } from '../../test/support/loopback.js';

const log = createLogger({ name: 'test', level: 'silent' });
const LABELS = toLabels({ direction: 'outbound', authority: 'ws:80', targetAddr: '127.0.0.1:1', tls: 'no_identity' });

/** A proxy that hands each Upgrade to `handle`, and a WebSocket-like upgrade through it. */
async function proxy(direction: 'inbound' | 'outbound', handle: (u: UpgradeExchange, metrics: ProxyMetrics) => void) {
  const metrics = new ProxyMetrics(new Registry());
  const server = createServer();
  server.on('upgrade', (req, socket: Socket, head: Buffer) =>
    handle(new UpgradeExchange(req, socket, head, { direction, metrics, log }), metrics),
  );
  const port = await listen(server);
  const upgrade = (): Promise<{ status: number; socket?: Socket }> =>
    new Promise((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port,
        path: '/ws',
        headers: { host: 'ws:80', connection: 'upgrade', upgrade: 'test', 'l5d-client-id': 'forged' },
      });
      req.on('upgrade', (res, socket) => {
        afterTest(() => socket.destroy());
        resolve({ status: res.statusCode ?? 0, socket });
      });
      req.on('response', (res) => resolve({ status: res.statusCode ?? 0 }));
      req.on('error', reject);
      req.end();
    });
  return { metrics, upgrade };
}

/** A raw app: answers 101, then echoes; `heads` gets each request head it read. */
async function rawApp() {
  const heads: string[] = [];
  const port = await listen(
    createTcpServer((s) => {
      s.once('data', (c: Buffer) => {
        heads.push(c.toString('latin1'));
        s.write('HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: test\r\n\r\n');
        s.pipe(s);
      });
    }),
  );
  return { port, heads };
}

describe('HTTP/1 Upgrade', () => {
  it('replays the head (mesh headers left out, extra added), relays, and counts it outbound', async () => {
    const app = await rawApp();
    const p = await proxy('outbound', (u) => {
      u.stripHeaders(isMeshRequestHeader);
      const endpoint = plainEndpoint('127.0.0.1', app.port);
      u.forward({
        upstream: { kind: 'stream', endpoint, identity: undefined, socket: connect(app.port, '127.0.0.1') },
        labels: LABELS,
        authority: 'ws:80',
        extra: { 'l5d-client-id': 'client.shop' },
      });
    });
    const { status, socket } = await p.upgrade();
    expect(status).toBe(101);
    expect(app.heads[0]).toMatch(/^GET \/ws HTTP\/1\.1\r\n/);
    expect(app.heads[0]).toContain('l5d-client-id: client.shop\r\n');
    expect(app.heads[0]).not.toContain('forged');
    socket!.write('ping');
    const echoed = await new Promise<string>((r) => socket!.once('data', (c: Buffer) => r(c.toString())));
    expect(echoed).toBe('ping');
    const text = await p.metrics.registry.metrics();
    expect(text).toMatch(/request_total\{[^}]*authority="ws:80"[^}]*\} 1/);
    expect(text).toMatch(/response_total\{[^}]*status_code="101"[^}]*\} 1/);
  });

  it('answers a failed connect with an HTTP error response (counted outbound)', async () => {
    const closed = createTcpServer();
    const port = await listen(closed);
    closed.close();
    const p = await proxy('outbound', (u) =>
      u.forward({
        upstream: {
          kind: 'stream',
          endpoint: plainEndpoint('127.0.0.1', port),
          identity: undefined,
          socket: connect(port, '127.0.0.1'),
        },
        labels: LABELS,
        authority: 'ws:80',
        extra: undefined,
      }),
    );
    expect((await p.upgrade()).status).toBe(502);
    expect(await p.metrics.registry.metrics()).toContain(
      'proxy_errors_total{direction="outbound",error="MINIMESH_PROXY_CONNECT_REFUSED"} 1',
    );
  });
});
