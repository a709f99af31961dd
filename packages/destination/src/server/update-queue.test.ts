import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { UpdateQueue } from './update-queue.js';

/** A sink that accepts `room` messages before asking the writer to wait for 'drain'. */
class FakeSink extends EventEmitter {
  written: number[] = [];
  constructor(public room: number) {
    super();
  }
  write(m: number): boolean {
    this.written.push(m);
    return this.written.length < this.room;
  }
}

describe('UpdateQueue', () => {
  it('writes straight through while the client keeps up', () => {
    const sink = new FakeSink(Infinity);
    let overflowed = false;
    const q = new UpdateQueue<number>(sink, 2, { onOverflow: () => (overflowed = true) });
    for (let i = 0; i < 10; i++) q.push(i);
    expect(sink.written).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(overflowed).toBe(false);
  });

  it('queues while the client is behind and drains in order', () => {
    const sink = new FakeSink(1);
    const q = new UpdateQueue<number>(sink, 5, { onOverflow: () => undefined });
    [1, 2, 3].forEach((n) => q.push(n));
    expect(sink.written).toEqual([1]);
    expect(q.length).toBe(2);
    sink.room = Infinity;
    sink.emit('drain');
    expect(sink.written).toEqual([1, 2, 3]);
    expect(q.length).toBe(0);
  });

  it('closes the stream once more than capacity is queued, and drops what it held', () => {
    const sink = new FakeSink(1);
    let overflows = 0;
    const sent: number[] = [];
    const q = new UpdateQueue<number>(sink, 3, { onOverflow: () => overflows++, onSent: (m) => sent.push(m) });
    for (let i = 0; i < 10; i++) q.push(i);
    expect(overflows).toBe(1);
    expect(q.isClosed).toBe(true);
    expect(q.length).toBe(0);
    expect(sink.written).toEqual([0]);
    expect(sent).toEqual([0]);
    sink.emit('drain');
    expect(sink.written).toEqual([0]);
  });
});
