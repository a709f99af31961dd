import { EventEmitter } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createConnectionGate, type ConnectionGateOptions } from './connection-gate.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
/** A connection's bytes wait one event-loop iteration (so that a FIN behind them is read) before its turn. */
const firstTurn = async (): Promise<void> => {
  await turn();
  await turn();
};

/** Just enough of a net.Socket for the gate: events, pause, unshift, destroy. */
class FakeSocket extends EventEmitter {
  destroyed = false;
  paused = false;
  unshifted: Buffer[] = [];
  constructor(readonly name: string) {
    super();
  }
  pause(): this {
    this.paused = true;
    return this;
  }
  unshift(b: Buffer): void {
    this.unshifted.push(b);
  }
  destroy(): this {
    this.destroyed = true;
    return this;
  }
}

function gateOf(opts: Partial<ConnectionGateOptions> = {}) {
  const handed: FakeSocket[] = [];
  const gate = createConnectionGate({
    batch: 64,
    maxWaiting: 1000,
    order: 'fifo',
    handOver: (s) => handed.push(s as unknown as FakeSocket),
    ...opts,
  });
  const admit = (name: string): FakeSocket => {
    const s = new FakeSocket(name);
    gate.admit(s as unknown as Socket);
    return s;
  };
  return { gate, handed, admit };
}

describe('connection gate', () => {
  it('hands a connection over on a later turn, its first bytes put back and reading paused', async () => {
    const { gate, handed, admit } = gateOf();
    const a = admit('a');
    a.emit('data', Buffer.from('PRI * HTTP/2.0'));
    a.emit('data', Buffer.from('\r\n\r\nSM'));
    expect(handed).toEqual([]);
    expect(gate.waiting).toBe(1);
    await turn();
    expect(handed).toEqual([]); // not in the iteration its bytes came
    await turn();
    expect(handed.map((s) => s.name)).toEqual(['a']);
    expect(Buffer.concat(a.unshifted).toString()).toBe('PRI * HTTP/2.0\r\n\r\nSM');
    expect(a.paused).toBe(true);
    expect(a.listenerCount('data') + a.listenerCount('end') + a.listenerCount('close')).toBe(0);
    expect(gate.stats).toEqual({ handedOver: 1, gone: 0, shed: 0 });
  });

  it('waits for the first bytes: a connection that sent nothing is not handed over', async () => {
    const { handed, admit } = gateOf();
    const a = admit('a');
    await turn();
    await turn();
    expect(handed).toEqual([]);
    a.emit('data', Buffer.from('x'));
    await firstTurn();
    expect(handed.map((s) => s.name)).toEqual(['a']);
  });

  it('a connection its client ended before its turn gets no HTTP/2 work and is destroyed', async () => {
    const { gate, handed, admit } = gateOf();
    const a = admit('a');
    const b = admit('b');
    const c = admit('c');
    a.emit('data', Buffer.from('preface'));
    a.emit('end'); // gave up while it waited
    b.emit('close'); // gone before it sent anything
    c.emit('data', Buffer.from('preface'));
    expect(gate.waiting).toBe(1);
    await firstTurn();
    expect(handed.map((s) => s.name)).toEqual(['c']);
    expect(a.destroyed && b.destroyed).toBe(true);
    expect(c.destroyed).toBe(false);
    expect(gate.stats).toEqual({ handedOver: 1, gone: 2, shed: 0 });
  });

  it('hands over at most `batch` per turn, oldest first (fifo)', async () => {
    const { handed, admit } = gateOf({ batch: 2 });
    for (const n of ['a', 'b', 'c', 'd', 'e']) admit(n).emit('data', Buffer.from('p'));
    await firstTurn();
    expect(handed.map((s) => s.name)).toEqual(['a', 'b']);
    await turn();
    expect(handed.map((s) => s.name)).toEqual(['a', 'b', 'c', 'd']);
    await turn();
    expect(handed.map((s) => s.name)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('newest first (lifo)', async () => {
    const { handed, admit } = gateOf({ batch: 2, order: 'lifo' });
    for (const n of ['a', 'b', 'c']) admit(n).emit('data', Buffer.from('p'));
    await firstTurn();
    expect(handed.map((s) => s.name)).toEqual(['c', 'b']);
    admit('d').emit('data', Buffer.from('p'));
    await turn();
    expect(handed.map((s) => s.name)).toEqual(['c', 'b', 'a']); // d's bytes came this iteration
    await turn();
    expect(handed.map((s) => s.name)).toEqual(['c', 'b', 'a', 'd']);
  });

  it('adaptive: oldest first until the oldest has waited congestedMs, then newest first', async () => {
    let clock = 0;
    const { handed, admit } = gateOf({ batch: 1, order: 'adaptive', congestedMs: 200, now: () => clock });
    for (const n of ['a', 'b', 'c', 'd']) admit(n).emit('data', Buffer.from('p'));
    await firstTurn();
    expect(handed.map((s) => s.name)).toEqual(['a']);
    clock = 200; // b has waited 200 ms: congested
    await turn();
    expect(handed.map((s) => s.name)).toEqual(['a', 'd']);
    await turn();
    expect(handed.map((s) => s.name)).toEqual(['a', 'd', 'c']);
  });

  it('past maxWaiting closes the oldest waiting connection before any HTTP/2 work; gone ones do not count', async () => {
    const { gate, handed, admit } = gateOf({ maxWaiting: 2 });
    const a = admit('a');
    const b = admit('b');
    const c = admit('c');
    const d = admit('d');
    a.emit('data', Buffer.from('p'));
    b.emit('data', Buffer.from('p'));
    b.emit('end');
    c.emit('data', Buffer.from('p'));
    expect(gate.stats.shed).toBe(0); // b is gone: two waiting (a, c)
    d.emit('data', Buffer.from('p'));
    expect(gate.stats.shed).toBe(1);
    expect(a.destroyed).toBe(true);
    expect(gate.waiting).toBe(2);
    await firstTurn();
    expect(handed.map((s) => s.name)).toEqual(['c', 'd']);
    expect(gate.stats).toEqual({ handedOver: 2, gone: 1, shed: 1 });
  });

  it('close destroys every connection not handed over and refuses new ones', async () => {
    const { gate, handed, admit } = gateOf();
    const a = admit('a');
    const b = admit('b');
    b.emit('data', Buffer.from('p'));
    gate.close();
    const c = admit('c');
    await firstTurn();
    expect(handed).toEqual([]);
    expect([a.destroyed, b.destroyed, c.destroyed]).toEqual([true, true, true]);
  });

  it('rejects a batch or bound below 1', () => {
    expect(() => gateOf({ batch: 0 })).toThrow(RangeError);
    expect(() => gateOf({ maxWaiting: 1.5 })).toThrow(RangeError);
  });
});

describe('connection gate on real sockets', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it('a client that sent its bytes and closed before its turn is never handed over; a live one reads its bytes back', async () => {
    const handed: Socket[] = [];
    const gate = createConnectionGate({ batch: 64, maxWaiting: 1000, order: 'fifo', handOver: (s) => handed.push(s) });
    // The dead client writes its bytes and its FIN in one tick: both are in when the server first reads.
    let accepted = 0;
    server = createServer((s) => {
      gate.admit(s);
      accepted++;
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const dead = connect(port, '127.0.0.1', () => dead.end('dead client preface'));
    await new Promise((resolve) => dead.on('close', resolve));
    const live = connect(port, '127.0.0.1', () => live.write('live client preface'));
    const got = await new Promise<string>((resolve) => {
      const wait = setInterval(() => {
        const s = handed[0];
        if (!s) return;
        clearInterval(wait);
        s.once('data', (d) => resolve(String(d)));
        s.resume();
      }, 5);
    });
    expect(accepted).toBe(2);
    expect(handed).toHaveLength(1);
    expect(got).toBe('live client preface');
    expect(gate.stats).toMatchObject({ handedOver: 1, gone: 1 });
    live.destroy();
    gate.close();
  });
});
