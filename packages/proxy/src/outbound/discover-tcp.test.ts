// The opaque discover stage with a fake discovery and next stage: by the original destination; none, or a
// failed lookup, refuses the connection.
import { describe, expect, it } from 'vitest';
import type { Discovery } from '../destination/discovery.js';
import { balancedConcrete, fakeSocket, logicalOf, recorder, toAddr } from '../../test/support/stages.js';
import type { TcpStream } from '../tcp/stream.js';
import type { Accept, Concrete, Opaque } from '../targets.js';
import { pushDiscoverTcp } from './discover-tcp.js';

const CONCRETE = balancedConcrete('10.96.0.10:5432', []);
const discovery: Discovery = {
  httpNow: () => undefined,
  http: () => Promise.reject(new Error('not for TCP')),
  tcp: (orig) =>
    orig.port === 5432 ? Promise.resolve(logicalOf(CONCRETE)) : Promise.reject(new Error('lookup failed')),
};

function run(orig: Accept['orig']) {
  const rejected: string[] = [];
  const socket = fakeSocket();
  const target: Opaque<Accept> = {
    kind: 'opaque',
    parent: { direction: 'outbound', socket, orig },
    socket,
    prefix: Buffer.from('hello'),
  };
  const stream = (t: Opaque<Accept>): TcpStream => ({
    socket: t.socket,
    prefix: t.prefix,
    reject: (err) => rejected.push((err as { code?: string }).code ?? (err as Error).message),
  });
  const next = recorder<Concrete, TcpStream>();
  const done = pushDiscoverTcp({ discovery, stream })(next.next)(target);
  return { done, next, rejected };
}

describe('outbound discover (opaque)', () => {
  it("hands on the original destination's Concrete with the stream (its prefix kept)", async () => {
    const { done, next, rejected } = run(toAddr('10.96.0.10', 5432));
    await done;
    expect(next.calls.map(([c, s]) => [c, s.prefix.toString()])).toEqual([[CONCRETE, 'hello']]);
    expect(rejected).toEqual([]);
  });

  it('refuses a connection without an original destination, or whose lookup failed', async () => {
    const none = run(undefined);
    await none.done;
    expect(none.rejected).toEqual(['MINIMESH_PROXY_NO_ORIGINAL_DST']);
    const failed = run(toAddr('10.96.0.11', 1));
    await failed.done;
    expect(failed.rejected).toEqual(['lookup failed']);
    expect([...none.next.calls, ...failed.next.calls]).toEqual([]);
  });
});
