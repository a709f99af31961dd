// bindGrpc and onStreamEnd against a real grpc-js server and client on loopback.
import { networkInterfaces } from 'node:os';
import { Client, Server, credentials, type ServerWritableStream } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { bindGrpc, onStreamEnd } from './grpc-server.js';

const METHOD = {
  path: '/test.Stream/Watch',
  requestStream: false,
  responseStream: true,
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (b: Buffer) => b,
  responseDeserialize: (b: Buffer) => b,
};

const hasIpv6Loopback = Object.values(networkInterfaces()).some((addrs) =>
  addrs?.some((a) => a.family === 'IPv6' && a.internal),
);
let server: Server | undefined;
afterEach(() => server?.forceShutdown());

/** A server whose one streaming method hands each call to `onCall`; resolves with its port. */
async function serve(onCall: (call: ServerWritableStream<unknown, unknown>) => void): Promise<number> {
  server = new Server();
  server.addService({ watch: METHOD }, { watch: onCall });
  return bindGrpc(server, '127.0.0.1', 0);
}

describe('bindGrpc', () => {
  it('binds port 0 to a free port and rejects a port in use', async () => {
    const port = await serve(() => undefined);
    expect(port).toBeGreaterThan(0);
    const other = new Server();
    await expect(bindGrpc(other, '127.0.0.1', port)).rejects.toThrow();
    other.forceShutdown();
  });

  it.skipIf(!hasIpv6Loopback)('brackets an IPv6 host', async () => {
    server = new Server();
    expect(await bindGrpc(server, '::1', 0)).toBeGreaterThan(0);
  });
});

describe('onStreamEnd', () => {
  it.each([
    ['the client cancels', 'cancel'],
    ['the server ends the stream', 'end'],
    ['the server fails the stream', 'fail'],
  ] as const)('runs once when %s', async (_what, how) => {
    let runs = 0;
    let ended: () => void = () => undefined;
    const over = new Promise<void>((resolve) => (ended = resolve));
    const port = await serve((call) => {
      onStreamEnd(call, () => {
        runs++;
        ended();
      });
      call.write(Buffer.from('hello'));
      if (how === 'end') call.end();
      if (how === 'fail') call.emit('error', { code: 13, details: 'boom' });
    });
    const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
    const stream = client.makeServerStreamRequest(
      METHOD.path,
      METHOD.requestSerialize,
      METHOD.responseDeserialize,
      Buffer.alloc(0),
    );
    stream.on('error', () => undefined);
    stream.on('data', () => {
      if (how === 'cancel') stream.cancel();
    });
    await over;
    await new Promise((r) => setTimeout(r, 50));
    expect(runs).toBe(1);
    client.close();
  });

  it('the returned function ends it early, and the stream ending later does not run it again', () => {
    const handlers = new Map<string, () => void>();
    const call = { on: (e: string, h: () => void) => handlers.set(e, h) } as unknown as ServerWritableStream<
      unknown,
      unknown
    >;
    let runs = 0;
    const release = onStreamEnd(call, () => runs++);
    release();
    handlers.get('close')?.();
    handlers.get('cancelled')?.();
    expect(runs).toBe(1);
  });
});
