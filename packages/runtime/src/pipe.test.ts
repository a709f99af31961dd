import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pipeBoth } from './pipe.js';

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A TCP server on loopback; resolves with its port and a promise of the first accepted socket. */
async function listen(onSocket?: (s: Socket) => void): Promise<{ port: number; accepted: Promise<Socket> }> {
  let accept!: (s: Socket) => void;
  const accepted = new Promise<Socket>((r) => (accept = r));
  const server = createServer((s) => {
    onSocket?.(s);
    accept(s);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, accepted };
}

describe('pipeBoth', () => {
  it('turns Nagle off on both sockets and carries bytes both ways', async () => {
    // upstream echoes with a prefix
    const upstream = await listen((s) => s.on('data', (d) => s.write(`echo:${d}`)));
    const relay = await listen();
    const client = connect(relay.port, '127.0.0.1');
    const inbound = await relay.accepted;
    const outbound = connect(upstream.port, '127.0.0.1');
    const spies = [vi.spyOn(inbound, 'setNoDelay'), vi.spyOn(outbound, 'setNoDelay')];
    pipeBoth(inbound, outbound);
    for (const spy of spies) expect(spy).toHaveBeenCalledWith(true);
    client.write('ping');
    const answer = await new Promise<string>((r) => client.once('data', (d) => r(String(d))));
    expect(answer).toBe('echo:ping');
    client.destroy();
  });

  it('destroys the other side when one side closes, and reports each close', async () => {
    const upstream = await listen();
    const relay = await listen();
    const client = connect(relay.port, '127.0.0.1');
    const inbound = await relay.accepted;
    const outbound = connect(upstream.port, '127.0.0.1');
    const far = await upstream.accepted;
    let closes = 0;
    pipeBoth(inbound, outbound, () => closes++);
    const outboundClosed = new Promise((r) => outbound.once('close', r));
    client.destroy();
    await outboundClosed;
    expect(outbound.destroyed).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(closes).toBeGreaterThanOrEqual(1);
    far.destroy();
  });
});
