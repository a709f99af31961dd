// Endpoint health with fake timers and a fake reconnect: a broken endpoint leaves the pick, is
// reconnected in the background with backoff, and comes back only once connected and its ejection is over.
import { EventEmitter } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { ClientHttp2Session } from 'node:http2';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { discovered } from '../../test/support/stages.js';
import type { Endpoint } from '../targets.js';
import { EndpointHealth, MIN_EJECTION_MS } from './endpoint-health.js';
import { DEFAULT_PEAK_EWMA, PeakEwma } from './p2c-peak-ewma.js';

class FakeSession extends EventEmitter {
  connecting = true;
  destroyed = false;
  closed = false;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const endpoint = (): Endpoint => ({
  ...discovered('10.0.0.1', 8080, 'web.shop'),
  load: new PeakEwma(DEFAULT_PEAK_EWMA),
});

describe('endpoint health', () => {
  it('takes a broken endpoint out, reconnects after the backoff, and lets it back after the ejection time', () => {
    const sessions: FakeSession[] = [];
    const health = new EndpointHealth(() => {
      const s = new FakeSession();
      sessions.push(s);
      return s as unknown as ClientHttp2Session;
    });
    const ep = endpoint();
    expect(health.ready(ep)).toBe(true);
    health.broken(ep);
    expect(health.ready(ep)).toBe(false);
    vi.advanceTimersByTime(100);
    expect(sessions).toHaveLength(1);
    sessions[0]!.connecting = false;
    sessions[0]!.emit('connect');
    // Connected at once, but still inside the ejection time.
    expect(health.ready(ep)).toBe(false);
    vi.advanceTimersByTime(MIN_EJECTION_MS);
    expect(health.ready(ep)).toBe(true);
  });

  it('backs off while the endpoint keeps breaking, and does nothing once closed', () => {
    let tries = 0;
    const health = new EndpointHealth(() => {
      tries++;
      return undefined;
    });
    const ep = endpoint();
    health.broken(ep);
    vi.advanceTimersByTime(100);
    health.broken(ep);
    vi.advanceTimersByTime(100);
    expect(tries).toBe(1);
    vi.advanceTimersByTime(100);
    expect(tries).toBe(2);
    health.close();
    const other = endpoint();
    health.broken(other);
    expect(health.ready(other)).toBe(true);
  });

  it('an endpoint nobody balances (no load estimate) is always ready', () => {
    const health = new EndpointHealth(() => undefined);
    const ep: Endpoint = { ...discovered('10.0.0.2', 80), load: undefined };
    health.broken(ep);
    expect(health.ready(ep)).toBe(true);
  });

  it('reconnects an endpoint whose object an update replaced (same load) after the old object is garbage', async () => {
    vi.useRealTimers();
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const tries: Endpoint[] = [];
    const health = new EndpointHealth((ep) => {
      tries.push(ep);
      return undefined;
    });
    let old: Endpoint | undefined = endpoint();
    // destination's next update: a new object for the same endpoint, with its load (the resolver's way).
    const current: Endpoint = { ...old };
    health.broken(old);
    old = undefined;
    // A WeakRef's target lives to the end of the job that made it: collect in the next one.
    await new Promise((r) => setImmediate(r));
    gc();
    await new Promise((r) => setTimeout(r, 250));
    expect(tries).toHaveLength(1);
    expect(tries[0]!.load).toBe(current.load);
    expect(tries[0]!.key).toBe(current.key);
    expect(health.ready(current)).toBe(false);
  });
});
