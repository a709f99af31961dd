import { describe, expect, it } from 'vitest';
import { refreshDelay } from './schedule.js';

describe('refreshDelay', () => {
  const H = 3600_000;
  it.each([
    ['24 h left → 70 %', 24 * H, 0.7 * 24 * H],
    ['100 s left → 70 s', 100_000, 70_000],
    ['5 s left → clamped up to 10 s', 5_000, 10_000],
    ['already expired → 10 s', -1000, 10_000],
    ['a year left → clamped down to 24 h', 365 * 24 * H, 24 * H],
  ])('%s', (_name, remaining, expected) => {
    expect(refreshDelay(1_000_000, 1_000_000 + remaining)).toBe(Math.floor(expected));
  });
});
