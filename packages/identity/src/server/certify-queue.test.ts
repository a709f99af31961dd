// Certify's admission control: never more than `concurrency` calls at work, the rest in arrival order,
// a call whose client went away while it waited never runs, a failure frees its slot, and the event loop
// turns between queued calls (what keeps new connections answered during a restart storm).
import { describe, expect, it } from 'vitest';
import { createCertifyQueue } from './certify-queue.js';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('certify queue', () => {
  it('runs at most `concurrency` calls at once, the rest in arrival order', async () => {
    const q = createCertifyQueue({ concurrency: 3 });
    const gates = Array.from({ length: 10 }, deferred);
    const started: number[] = [];
    let peak = 0;
    const all = gates.map((g, i) =>
      q.run(async () => {
        started.push(i);
        peak = Math.max(peak, q.active);
        await g.promise;
        return i;
      }),
    );
    expect(started).toEqual([0, 1, 2]);
    expect(q.queued).toBe(7);
    for (const g of gates) {
      g.resolve();
      for (let i = 0; i < 3; i++) await tick();
    }
    expect(await Promise.all(all)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(peak).toBe(3);
    expect(q.active).toBe(0);
  });

  it('skips a call cancelled while it waited, and frees the slot of one that failed', async () => {
    const q = createCertifyQueue({ concurrency: 1 });
    const gate = deferred();
    const ran: string[] = [];
    const first = q.run(async () => {
      ran.push('first');
      await gate.promise;
    });
    let gone = false;
    const cancelled = q.run(
      async () => {
        ran.push('cancelled');
        return 'never';
      },
      () => gone,
    );
    const failing = q.run(async () => {
      ran.push('failing');
      throw new Error('TokenReview failed');
    });
    const last = q.run(async () => {
      ran.push('last');
      return 'ok';
    });
    gone = true;
    gate.reject(new Error('first failed'));
    await expect(first).rejects.toThrow('first failed');
    await expect(cancelled).resolves.toBeUndefined();
    await expect(failing).rejects.toThrow('TokenReview failed');
    await expect(last).resolves.toBe('ok');
    expect(ran).toEqual(['first', 'failing', 'last']);
  });

  it('starts queued calls in a later macrotask, so I/O is read between them', async () => {
    const q = createCertifyQueue({ concurrency: 1 });
    const order: string[] = [];
    const a = q.run(async () => void order.push('a'));
    const b = q.run(async () => void order.push('b'));
    // An I/O-phase callback scheduled now must run before b starts.
    setImmediate(() => order.push('io'));
    await Promise.all([a, b]);
    expect(order).toEqual(['a', 'io', 'b']);
  });

  it('refuses a concurrency that is not a whole number >= 1', () => {
    expect(() => createCertifyQueue({ concurrency: 0 })).toThrow(/expected a whole number >= 1/);
    expect(() => createCertifyQueue({ concurrency: 1.5 })).toThrow(/expected a whole number >= 1/);
  });
});
