// The watched-stream cache against fake gRPC streams: one stream per key, reopened with backoff (one
// reopen per failed call), final failures left alone, idle entries dropped, nothing after close().
import { EventEmitter } from 'node:events';
import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WatchCache, type WatchSpec } from './watch-cache.js';

class FakeStream extends EventEmitter {
  cancelled = false;
  cancel(): void {
    this.cancelled = true;
  }
}

interface State {
  messages: string[];
}

const BACKOFF = { minMs: 100, maxMs: 400 };

function setup(overrides: Partial<WatchSpec<string, State, string>> = {}, idleMs = 10_000) {
  const streams: Array<{ key: string; stream: FakeStream }> = [];
  const events: string[] = [];
  const spec: WatchSpec<string, State, string> = {
    open: (key) => {
      const stream = new FakeStream();
      streams.push({ key, stream });
      return stream as unknown as ClientReadableStream<string>;
    },
    message: (s, m) => s.messages.push(m),
    failed: (key, _s, err) => {
      events.push(`failed ${key} ${err.code}`);
      return err.code !== 3;
    },
    openFailed: (key) => events.push(`openFailed ${key}`),
    ended: (key) => events.push(`ended ${key}`),
    reopening: () => events.push('reopening'),
    dropped: (key) => events.push(`dropped ${key}`),
    ...overrides,
  };
  const cache = new WatchCache(spec, { idleMs, sweepMs: 1000, backoff: BACKOFF });
  return { cache, streams, events, make: (): State => ({ messages: [] }) };
}

const error = (code: number): ServiceError => Object.assign(new Error(`code ${code}`), { code }) as ServiceError;

beforeEach(() => {
  vi.useFakeTimers();
  // No jitter: each delay is the whole doubled one (100, 200, 400 ms).
  vi.spyOn(Math, 'random').mockReturnValue(0);
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('WatchCache', () => {
  it('keeps one stream per key, shared by every get(); messages reach the entry', () => {
    const { cache, streams, make } = setup();
    const a = cache.get('a', make);
    expect(cache.get('a', make)).toBe(a);
    cache.get('b', make);
    expect(streams.map((s) => s.key)).toEqual(['a', 'b']);
    streams[0]!.stream.emit('data', 'hello');
    expect(a.messages).toEqual(['hello']);
    expect(cache.peek('c')).toBeUndefined();
    expect(streams).toHaveLength(2);
    expect(cache.size).toBe(2);
    cache.close();
  });

  it('reopens a failed stream after the backoff, once per call (an error and then an end are one failure)', () => {
    const { cache, streams, events, make } = setup();
    cache.get('a', make);
    streams[0]!.stream.emit('error', error(14));
    streams[0]!.stream.emit('end');
    expect(events).toEqual(['failed a 14', 'reopening']);
    vi.advanceTimersByTime(BACKOFF.minMs);
    expect(streams).toHaveLength(2);
    // A clean end is reopened too, after the doubled backoff (no message came in between).
    streams[1]!.stream.emit('end');
    vi.advanceTimersByTime(BACKOFF.minMs);
    expect(streams).toHaveLength(2);
    vi.advanceTimersByTime(BACKOFF.minMs);
    expect(streams).toHaveLength(3);
    expect(events.slice(2)).toEqual(['ended a', 'reopening']);
    cache.close();
  });

  it('starts the backoff over after a message', () => {
    const { cache, streams, make } = setup();
    cache.get('a', make);
    for (let i = 0; i < 3; i++) {
      streams.at(-1)!.stream.emit('error', error(14));
      vi.advanceTimersByTime(BACKOFF.maxMs);
    }
    expect(streams).toHaveLength(4);
    // Without a message the next wait would be the cap (400 ms); after one it is 100 ms again.
    streams.at(-1)!.stream.emit('data', 'x');
    streams.at(-1)!.stream.emit('error', error(14));
    vi.advanceTimersByTime(BACKOFF.minMs);
    expect(streams).toHaveLength(5);
    cache.close();
  });

  it('leaves a final failure alone: the entry keeps its state', () => {
    const { cache, streams, make } = setup();
    const a = cache.get('a', make);
    streams[0]!.stream.emit('data', 'kept');
    streams[0]!.stream.emit('error', error(3));
    vi.advanceTimersByTime(BACKOFF.maxMs * 4);
    expect(streams).toHaveLength(1);
    expect(cache.get('a', make)).toBe(a);
    expect(a.messages).toEqual(['kept']);
    cache.close();
  });

  it('retries a stream that could not be opened', () => {
    let fail = true;
    const opened: string[] = [];
    const { cache, events, make } = setup({
      open: (key) => {
        if (fail) throw new Error('channel closed');
        opened.push(key);
        return new FakeStream() as unknown as ClientReadableStream<string>;
      },
    });
    cache.get('a', make);
    expect(events).toEqual(['openFailed a', 'reopening']);
    fail = false;
    vi.advanceTimersByTime(BACKOFF.minMs);
    expect(opened).toEqual(['a']);
    cache.close();
  });

  it('drops entries unused for idleMs (cancelling their streams), never permanent ones', () => {
    const { cache, streams, events, make } = setup({}, 2000);
    cache.get('idle', make);
    cache.get('kept', make, true);
    vi.advanceTimersByTime(1500);
    cache.peek('idle');
    vi.advanceTimersByTime(1500);
    expect(cache.size).toBe(2);
    vi.advanceTimersByTime(1000);
    expect(events).toEqual(['dropped idle']);
    expect(streams[0]!.stream.cancelled).toBe(true);
    expect(streams[1]!.stream.cancelled).toBe(false);
    expect(cache.size).toBe(1);
    // Asked again: a new entry and a new stream.
    cache.get('idle', make);
    expect(streams).toHaveLength(3);
    cache.close();
  });

  it('without a source keeps what make() gave, and opens nothing', () => {
    const { cache, make } = setup({ open: undefined });
    const a = cache.get('a', make);
    expect(cache.get('a', make)).toBe(a);
    cache.close();
  });

  it('after close() cancels every stream and reopens none', () => {
    const { cache, streams, events, make } = setup();
    cache.get('a', make);
    cache.close();
    expect(streams[0]!.stream.cancelled).toBe(true);
    streams[0]!.stream.emit('error', error(1));
    vi.advanceTimersByTime(BACKOFF.maxMs * 4);
    expect(streams).toHaveLength(1);
    expect(events).toEqual([]);
  });
});
