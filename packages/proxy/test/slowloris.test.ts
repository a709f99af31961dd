// Issue 17: slowloris on the proxy's three listeners, in-process on loopback (client → outbound C →
// mTLS → inbound D → app), with the timeouts set short through the proxy's own environment:
// MINIMESH_PROXY_DETECT_TIMEOUT=300ms and MINIMESH_PROXY_HTTP1_HEADER_READ_TIMEOUT=1s.
// - HTTP/1 whose headers come one byte every 200 ms: 408 and closed about 1 s after the request
//   began, on the outbound and inbound listeners and on the admin server; nothing reaches the app.
// - A connection that never completes a request line (one byte every 200 ms): the proxy stops waiting
//   after the detect timeout and hands it on as opaque TCP, as linkerd2-proxy does; from then on it
//   lives as long as the server behind it keeps it (here: the server closes it, and so does the proxy).
// - An admin connection that sends nothing is closed (408) after the header read timeout.
// Bounds are generous (the machine is shared): "closed after ≥ the timeout and well before a minute".
import { connect as netConnect, createServer as createTcp, type Server as TcpServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProxy } from '../src/index.js';
import { h1Echo, listen } from './support/apps.js';
import { startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { removeTempDirs, startHarnessProxy } from './support/harness.js';
import { createTestPki } from './support/pki.js';

const C_ID = 'client.default.serviceaccount.identity.minimesh.cluster.local';
const D_ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
const WEB = 'web.default.svc.cluster.local';
const DETECT_MS = 300;
const HEADER_MS = 1000;
const SHORT = { MINIMESH_PROXY_DETECT_TIMEOUT: `${DETECT_MS}ms`, MINIMESH_PROXY_HTTP1_HEADER_READ_TIMEOUT: '1s' };
/** Slack for a busy machine: Node checks header deadlines every 250 ms here, the rest is scheduling. */
const SLACK_MS = 4000;

let cp: FakeControlPlane;
let c: RunningProxy;
let d: RunningProxy;
let webPort: number;
const seen: string[] = [];
/** A raw TCP server standing for "the app" of opaque connections: records when and what it got. */
let sink: TcpServer;
let sinkPort: number;
const sinkConns: Array<{ at: number; socket: Socket; bytes: () => string }> = [];
/** Where the next outbound connection's original destination points. */
let outboundOrig: { ip: string; port: number } = { ip: '10.96.0.80', port: 80 };
let inboundOrig: () => number = () => webPort;
const closers: Array<{ close(): unknown }> = [];

beforeAll(async () => {
  const pki = await createTestPki();
  cp = await startFakeControlPlane(pki);
  const web = h1Echo('web');
  web.on('request', (req) => seen.push(`${req.method} ${req.url}`));
  webPort = await listen(web);
  sink = createTcp((socket) => {
    let got = '';
    socket.on('data', (b: Buffer) => (got += b.toString('latin1')));
    socket.on('error', () => undefined);
    sinkConns.push({ at: Date.now(), socket, bytes: () => got });
  });
  sinkPort = await listen(sink);
  d = await startHarnessProxy({
    identity: D_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    env: SHORT,
    inbound: () => ({ ip: '127.0.0.1', port: inboundOrig() }),
  });
  c = await startHarnessProxy({
    identity: C_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    env: SHORT,
    outbound: () => outboundOrig,
  });
  cp.destination.set(`${WEB}:80`, [{ ip: '127.0.0.1', port: d.ports.inbound, identity: D_ID }]);
  cp.destination.profiles.set('10.96.0.80:80', { fullyQualifiedName: WEB });
  await Promise.all([c.ready, d.ready]);
  closers.push(web);
}, 120_000);

afterAll(async () => {
  await c?.shutdown(100);
  await d?.shutdown(100);
  for (const s of sinkConns) s.socket.destroy();
  sink?.close();
  for (const s of closers) s.close();
  await cp?.close();
  removeTempDirs();
});

interface Dribbled {
  /** Everything the listener answered. */
  answer: string;
  /** Milliseconds from connect to close (undefined: still open when the test gave up). */
  closedAfterMs: number | undefined;
}

/**
 * Connects, writes `first` at once, then one byte of `drip` every 200 ms (repeating it) until the
 * listener closes the connection or `giveUpMs` passes.
 */
function dribble(port: number, first: string, drip: string, giveUpMs = 20_000): Promise<Dribbled> {
  return new Promise((resolve) => {
    let answer = '';
    let i = 0;
    const t0 = Date.now();
    const s = netConnect(port, '127.0.0.1', () => {
      if (first) s.write(first);
    });
    const tick = setInterval(() => {
      if (!drip || s.destroyed || !s.writable) return;
      s.write(drip[i++ % drip.length]!);
    }, 200);
    const finish = (closed: boolean) => {
      clearInterval(tick);
      clearTimeout(giveUp);
      s.destroy();
      resolve({ answer, closedAfterMs: closed ? Date.now() - t0 : undefined });
    };
    const giveUp = setTimeout(() => finish(false), giveUpMs);
    s.on('data', (b: Buffer) => (answer += b.toString('latin1')));
    s.on('close', () => finish(true));
    s.on('error', () => undefined);
  });
}

const statusOf = (r: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(r)?.[1] ?? 0);

describe('slowloris: HTTP/1 headers a byte at a time', () => {
  it('outbound listener: 408 and closed after the header read timeout; nothing forwarded', async () => {
    outboundOrig = { ip: '10.96.0.80', port: 80 };
    const r = await dribble(c.ports.outbound, `GET /slow-out HTTP/1.1\r\nHost: ${WEB}\r\n`, 'X-Slow: aaaa\r\n');
    console.log(`slowloris: outbound listener closed the connection after ${r.closedAfterMs} ms`);
    expect(statusOf(r.answer)).toBe(408);
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(HEADER_MS);
    expect(r.closedAfterMs).toBeLessThan(HEADER_MS + SLACK_MS);
    expect(seen).not.toContain('GET /slow-out');
  }, 30_000);

  it('inbound listener (plaintext): 408 and closed after the header read timeout; nothing forwarded', async () => {
    inboundOrig = () => webPort;
    const r = await dribble(d.ports.inbound, `GET /slow-in HTTP/1.1\r\nHost: ${WEB}\r\n`, 'X-Slow: aaaa\r\n');
    console.log(`slowloris: inbound listener closed the connection after ${r.closedAfterMs} ms`);
    expect(statusOf(r.answer)).toBe(408);
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(HEADER_MS);
    expect(r.closedAfterMs).toBeLessThan(HEADER_MS + SLACK_MS);
    expect(seen).not.toContain('GET /slow-in');
  }, 30_000);

  it('admin server: 408 and closed after the header read timeout', async () => {
    const r = await dribble(c.ports.admin, 'GET /metrics HTTP/1.1\r\nHost: admin\r\n', 'X-Slow: aaaa\r\n');
    console.log(`slowloris: admin server closed the connection after ${r.closedAfterMs} ms`);
    expect(statusOf(r.answer)).toBe(408);
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(HEADER_MS);
    expect(r.closedAfterMs).toBeLessThan(HEADER_MS + SLACK_MS);
  }, 30_000);

  it('admin server: a connection that sends nothing is closed after the header read timeout', async () => {
    const r = await dribble(c.ports.admin, '', '');
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(HEADER_MS);
    expect(r.closedAfterMs).toBeLessThan(HEADER_MS + SLACK_MS);
  }, 30_000);

  it('a prompt request on the same listeners is still served (the bound is not a blanket timeout)', async () => {
    outboundOrig = { ip: '10.96.0.80', port: 80 };
    const r = await dribble(c.ports.outbound, `GET /prompt HTTP/1.1\r\nHost: ${WEB}\r\nConnection: close\r\n\r\n`, '');
    expect(statusOf(r.answer)).toBe(200);
    expect(seen).toContain('GET /prompt');
  }, 30_000);
});

describe('slowloris: a request line that never completes (protocol detection)', () => {
  it('outbound: held in detection only for the detect timeout, then relayed as opaque TCP', async () => {
    outboundOrig = { ip: '127.0.0.1', port: sinkPort };
    const before = sinkConns.length;
    const t0 = Date.now();
    const done = dribble(c.ports.outbound, 'G', 'ET /never-ending');
    const conn = await waitFor(() => sinkConns[before], 10_000);
    const handedAfter = conn.at - t0;
    console.log(`slowloris: outbound detection let go after ${handedAfter} ms (detect timeout ${DETECT_MS} ms)`);
    expect(handedAfter).toBeGreaterThanOrEqual(DETECT_MS - 20);
    expect(handedAfter).toBeLessThan(DETECT_MS + SLACK_MS);
    // The bytes read during detection reach the server first, unchanged.
    await waitFor(() => (conn.bytes().length >= 2 ? true : undefined), 5000);
    expect(conn.bytes().startsWith('GE')).toBe(true);
    // When the server behind it closes, so does the proxy: nothing is left holding the client.
    const closedAt = Date.now();
    conn.socket.end();
    const r = await done;
    expect(r.closedAfterMs).toBeDefined();
    expect(t0 + (r.closedAfterMs ?? 0) - closedAt).toBeLessThan(SLACK_MS);
  }, 30_000);

  it('inbound: held for the ClientHello peek and detection only, then relayed to the app port', async () => {
    inboundOrig = () => sinkPort;
    const before = sinkConns.length;
    const t0 = Date.now();
    const done = dribble(d.ports.inbound, 'P', 'OST /never-ending');
    const conn = await waitFor(() => sinkConns[before], 10_000);
    const handedAfter = conn.at - t0;
    console.log(`slowloris: inbound detection let go after ${handedAfter} ms (detect timeout ${DETECT_MS} ms)`);
    expect(handedAfter).toBeGreaterThanOrEqual(DETECT_MS - 20);
    // The TLS peek and protocol detection each wait at most the detect timeout.
    expect(handedAfter).toBeLessThan(2 * DETECT_MS + SLACK_MS);
    await waitFor(() => (conn.bytes().length >= 2 ? true : undefined), 5000);
    expect(conn.bytes().startsWith('PO')).toBe(true);
    const closedAt = Date.now();
    conn.socket.end();
    const r = await done;
    expect(r.closedAfterMs).toBeDefined();
    expect(t0 + (r.closedAfterMs ?? 0) - closedAt).toBeLessThan(SLACK_MS);
    inboundOrig = () => webPort;
  }, 30_000);
});

async function waitFor<T>(fn: () => T | undefined, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`nothing after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
