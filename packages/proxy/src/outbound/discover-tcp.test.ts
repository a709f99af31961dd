// The opaque discover stage with a fake discovery and next stage: by the original destination; none, or a
// failed lookup, refuses the connection. A backend an opaque or TLS route picked wins: a Forward
// backend's own address, a Balancer backend's Service (Destination.Get by its authority).
import { describe, expect, it } from 'vitest';
import type { Discovery } from '../destination/discovery.js';
import { balancedConcrete, fakeSocket, logicalOf, recorder, toAddr } from '../../test/support/stages.js';
import type { TcpStream } from '../tcp/stream.js';
import type { Accept, Concrete, Opaque } from '../targets.js';
import { pushDiscoverTcp } from './discover-tcp.js';

const CONCRETE = balancedConcrete('10.96.0.10:5432', []);
const PROXY = balancedConcrete('egress-proxy.shop.svc.cluster.local:3128', []);
const discovery: Discovery = {
  httpNow: () => undefined,
  http: (host) =>
    host === 'egress-proxy.shop.svc.cluster.local:3128'
      ? Promise.resolve(logicalOf(PROXY))
      : Promise.reject(new Error('no such service')),
  tcp: (orig) =>
    orig.port === 5432 ? Promise.resolve(logicalOf(CONCRETE)) : Promise.reject(new Error('lookup failed')),
};

function run(orig: Accept['orig'], backend?: Opaque<Accept>['backend']) {
  const rejected: string[] = [];
  const socket = fakeSocket();
  const target: Opaque<Accept> = {
    kind: 'opaque',
    parent: { direction: 'outbound', socket, orig },
    socket,
    prefix: Buffer.from('hello'),
    ...(backend ? { backend } : {}),
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

  const meta = { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside' };

  it("a route's Forward backend: its own address in plaintext, whatever the original destination", async () => {
    const backend = { kind: 'forward' as const, weight: 1, meta, addr: { ip: '127.0.0.1', port: 15432 } };
    const { done, next, rejected } = run(toAddr('203.0.113.10', 5432), backend);
    await done;
    expect(next.calls.map(([c, s]) => [c.kind, c.authority, s.prefix.toString()])).toEqual([
      ['forward', '127.0.0.1:15432', 'hello'],
    ]);
    expect(rejected).toEqual([]);
  });

  it("a route's Balancer backend: its Service's endpoints; a Service destination does not know refuses", async () => {
    const svc = (authority: string) => ({ kind: 'balancer' as const, weight: 1, meta, authority });
    const ok = run(toAddr('203.0.113.10', 3128), svc('egress-proxy.shop.svc.cluster.local:3128'));
    await ok.done;
    expect(ok.next.calls.map(([c]) => c)).toEqual([PROXY]);
    const gone = run(toAddr('203.0.113.10', 3128), svc('gone.shop.svc.cluster.local:3128'));
    await gone.done;
    expect(gone.rejected).toEqual(['MINIMESH_PROXY_NO_ENDPOINTS']);
    expect(gone.next.calls).toEqual([]);
  });
});
