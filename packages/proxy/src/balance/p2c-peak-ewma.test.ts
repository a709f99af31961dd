import { describe, expect, it } from 'vitest';
import { PeakEwma, pickP2c } from './p2c-peak-ewma.js';

function clock() {
  let t = 0;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('PeakEwma', () => {
  it('starts at the default RTT and weights cost by in-flight requests', () => {
    const c = clock();
    const e = new PeakEwma({ decayMs: 10_000, defaultRttMs: 30, now: c.now });
    expect(e.cost()).toBeCloseTo(30);
    const t0 = e.start();
    expect(e.cost()).toBeCloseTo(60);
    c.advance(10);
    e.end(t0);
    expect(e.pending).toBe(0);
  });

  it('jumps to a slower observation at once (the peak) and decays back over time', () => {
    const c = clock();
    const e = new PeakEwma({ decayMs: 10_000, defaultRttMs: 30, now: c.now });
    e.observe(500);
    expect(e.cost()).toBeCloseTo(500);
    c.advance(10_000);
    expect(e.cost()).toBeCloseTo(500 / Math.E, 0);
    e.observe(5);
    expect(e.cost()).toBeLessThan(500 / Math.E);
    expect(e.cost()).toBeGreaterThan(5);
  });
});

describe('pickP2c', () => {
  const ep = (rtt: number, pending = 0) => {
    const load = new PeakEwma({ decayMs: 10_000, defaultRttMs: rtt, now: () => 0 });
    load.pending = pending;
    return { load, rtt };
  };

  it('returns undefined for no endpoints and the only one for one', () => {
    expect(pickP2c([])).toBeUndefined();
    const one = ep(1);
    expect(pickP2c([one])).toBe(one);
  });

  it('of the two sampled, picks the cheaper', () => {
    const fast = ep(1);
    const slow = ep(100);
    const seq = [0.1, 0.9];
    let i = 0;
    expect(pickP2c([slow, fast], () => seq[i++ % 2] as number)).toBe(fast);
  });

  it('spreads load when endpoints are equal, and avoids a slow one', () => {
    const eps = [ep(10), ep(10), ep(10), ep(1000)];
    const counts = new Map<unknown, number>();
    for (let i = 0; i < 4000; i++) {
      const p = pickP2c(eps)!;
      counts.set(p, (counts.get(p) ?? 0) + 1);
    }
    for (const e of eps.slice(0, 3)) expect(counts.get(e)).toBeGreaterThan(900);
    expect(counts.get(eps[3]) ?? 0).toBe(0);
  });

  it('in-flight requests move traffic away from a busy endpoint', () => {
    const busy = ep(10, 50);
    const idle = ep(10, 0);
    for (let i = 0; i < 100; i++) expect(pickP2c([busy, idle])).toBe(idle);
  });

  it('leaves out an endpoint whose connection broke while another is ready, and uses it when none is', () => {
    // A broken endpoint fails fast, so its RTT looks best: without the readiness check it would win.
    const broken = ep(0.1);
    const fine = ep(100);
    broken.load!.ready = false;
    for (let i = 0; i < 100; i++) expect(pickP2c([broken, fine, broken])).toBe(fine);
    fine.load!.ready = false;
    expect([broken, fine]).toContain(pickP2c([broken, fine]));
    broken.load!.ready = true;
    expect(pickP2c([broken, fine])).toBe(broken);
  });
});
