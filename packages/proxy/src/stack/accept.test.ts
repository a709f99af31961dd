// The accept stage on a real listener with a fake next stage: each connection becomes an Accept with its
// original destination, is kept for the drain while open and counted when asked; what the chain throws
// closes the connection.
import { createServer, type Socket } from 'node:net';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ProxyMetrics, toLabels } from '../metrics/metrics.js';
import type { Accept } from '../targets.js';
import { pushAccept } from './accept.js';
import { getTcpUserTimeout } from '../native/index.js';
import { dial, listen, tcpTimer, until } from '../../test/support/loopback.js';

const log = createLogger({ name: 'test', level: 'silent' });
describe('accept', () => {
  it('makes an Accept with the original destination, tracks the socket while open, and counts it', async () => {
    const metrics = new ProxyMetrics(new Registry());
    const sockets = new Set<Socket>();
    const seen: Accept[] = [];
    const server = pushAccept({
      direction: 'outbound',
      log,
      sockets,
      originalDst: () => ({ ip: '10.96.0.10', port: 80 }),
      count: {
        metrics,
        labels: (orig) => toLabels({ direction: 'outbound', targetAddr: orig?.key ?? '', tls: 'no_identity' }),
      },
    })((a) => void seen.push(a));
    const c = dial(await listen(server));
    await until(() => seen.length > 0);
    expect(seen[0]).toMatchObject({
      direction: 'outbound',
      orig: { ip: '10.96.0.10', port: 80, key: '10.96.0.10:80' },
    });
    expect(sockets.size).toBe(1);
    expect(await metrics.registry.metrics()).toMatch(
      /tcp_open_connections\{[^}]*target_addr="10\.96\.0\.10:80"[^}]*\} 1/,
    );
    c.destroy();
    await until(() => sockets.size === 0);
    expect(sockets.size).toBe(0);
  });

  it('finds dead peers on what it accepts: TCP keepalive after 10 s idle, TCP_USER_TIMEOUT 30 s', async () => {
    const seen: Accept[] = [];
    const server = pushAccept({ direction: 'inbound', log, sockets: new Set(), originalDst: () => undefined })(
      (a) => void seen.push(a),
    );
    const port = await listen(server);
    const c = dial(port);
    await until(() => seen.length > 0);
    // Probing within the minute (ss words it "keepalive,9.9…,0"; the kernel's own default would be 2 h).
    expect(tcpTimer(port, c.localPort!)).toMatch(/^keepalive,[0-9.]+(sec|ms),0$/);
    expect(tcpTimer(c.localPort!, port)).toBe(''); // the test's own client: no keepalive, no timer
    // Sent data unacknowledged for 30 s ends it, as the kernel has it (the test's client: the default, 0).
    expect(getTcpUserTimeout(seen[0]!.socket)).toBe(30_000);
    expect(getTcpUserTimeout(c)).toBe(0);
    // A connection another listener hands over (proxy.ts's extra outbound addresses) gets the same.
    const extra = createServer((s) => server.emit('connection', s));
    const extraPort = await listen(extra);
    const e = dial(extraPort);
    await until(() => seen.length > 1);
    expect(tcpTimer(extraPort, e.localPort!)).toMatch(/^keepalive,[0-9.]+(sec|ms),0$/);
    expect(getTcpUserTimeout(seen[1]!.socket)).toBe(30_000);
  });

  it('without an original destination (not redirected) the Accept says so', async () => {
    const seen: Accept[] = [];
    const server = pushAccept({ direction: 'inbound', log, sockets: new Set(), originalDst: () => undefined })(
      (a) => void seen.push(a),
    );
    dial(await listen(server));
    await until(() => seen.length > 0);
    expect(seen[0]!.orig).toBeUndefined();
  });

  it('closes a connection the chain failed on, thrown or rejected', async () => {
    for (const fail of [
      () => {
        throw new Error('a stage threw');
      },
      () => Promise.reject(new Error('a stage rejected')),
    ]) {
      const server = pushAccept({ direction: 'outbound', log, sockets: new Set(), originalDst: () => undefined })(fail);
      const c = dial(await listen(server));
      const closed = new Promise((r) => c.once('close', r));
      await expect(closed).resolves.toBeDefined();
    }
  });
});
