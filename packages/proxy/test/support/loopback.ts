// Loopback plumbing for the unit tests of stages and libraries: what a test opens here is closed after
// it (this module registers the afterEach of every test file that imports it).
import { connect, createServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import type { Server as H1Server } from 'node:http';
import type { Http2Server } from 'node:http2';
import { execFileSync } from 'node:child_process';
import { afterEach } from 'vitest';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** Runs `fn` after the current test. */
export function afterTest(fn: () => void): void {
  cleanups.push(fn);
}

/** Listens on 127.0.0.1 (a free port), closed after the test. */
export function listen(server: TcpServer | H1Server | Http2Server): Promise<number> {
  afterTest(() => server.close());
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

/** A client connection to 127.0.0.1:port (errors ignored), destroyed after the test. */
export function dial(port: number, onConnect?: (c: Socket) => void): Socket {
  const c = connect(port, '127.0.0.1', () => onConnect?.(c));
  c.on('error', () => undefined);
  afterTest(() => c.destroy());
  return c;
}

/** A connected pair: the client's socket and the accepting side's (what a proxy stage gets). */
export async function socketPair(onConnect?: (client: Socket) => void): Promise<{ client: Socket; accepted: Socket }> {
  const server = createServer();
  const port = await listen(server);
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const client = dial(port, onConnect);
  const s = await accepted;
  afterTest(() => s.destroy());
  return { client, accepted: s };
}

/** The accepting side of a connection whose client sends `bytes` once connected. */
export async function acceptedSending(bytes: string): Promise<Socket> {
  return (await socketPair((c) => c.write(bytes))).accepted;
}

/** A port nothing listens on (it was listened on a moment ago). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  server.close();
  return port;
}

/** Waits (up to ~1 s) until `check()` holds. */
export async function until(check: () => boolean, ms = 1000): Promise<void> {
  for (let waited = 0; waited < ms && !check(); waited += 10) await new Promise((r) => setTimeout(r, 10));
}

/** How the client side of a connection ended: an error code (a reset is ECONNRESET) or "close". */
export function ending(client: Socket): Promise<string> {
  return new Promise((r) => {
    client.on('error', (err: NodeJS.ErrnoException) => r(err.code ?? 'error'));
    client.on('close', () => r('close'));
  });
}

/**
 * The kernel's timer on the established loopback connection from local port `from` to port `to`, as
 * `ss -o` shows it ("keepalive,9.9sec,0" when SO_KEEPALIVE is on; "" without a timer).
 */
export function tcpTimer(from: number, to: number): string {
  const out = execFileSync('ss', ['-tnoH', 'state', 'established', `( sport = :${from} and dport = :${to} )`], {
    encoding: 'utf8',
  });
  const lines = out.trim().split('\n').filter(Boolean);
  if (lines.length !== 1) throw new Error(`ss: expected one connection ${from} → ${to}, got: ${out}`);
  return /timer:\(([^)]*)\)/.exec(lines[0]!)?.[1] ?? '';
}
