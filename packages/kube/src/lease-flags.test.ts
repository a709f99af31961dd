// The Lease flags: defaults, the program's duration parser, and the ordering check (exit 2).
import { describe, expect, it } from 'vitest';
import { KubeConfigError } from './errors.js';
import { leaseFlags, parseLeaseFlags, type LeaseFlagValues } from './lease-flags.js';

const seconds = (flag: string, v: string): number => {
  const m = /^(\d+)s$/.exec(v);
  if (!m) throw new Error(`${flag}: not a duration: ${v}`);
  return Number(m[1]) * 1000;
};
const defaults = (name: string): LeaseFlagValues => {
  const f = leaseFlags(name);
  return {
    'lease-name': f['lease-name'].default,
    'lease-duration': f['lease-duration'].default,
    'lease-renew-deadline': f['lease-renew-deadline'].default,
    'lease-retry-period': f['lease-retry-period'].default,
  };
};

describe('lease flags', () => {
  it("client-go's timings by default, with the program's Lease name", () => {
    expect(parseLeaseFlags(defaults('minimesh-policy-write'), seconds)).toEqual({
      name: 'minimesh-policy-write',
      durationMs: 30_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2000,
    });
  });

  it.each([
    ['10s', '10s', '2s'],
    ['30s', '10s', '10s'],
    ['30s', '10s', '0s'],
  ])('refuses duration %s / deadline %s / period %s', (d, r, p) => {
    const f = { ...defaults('l'), 'lease-duration': d, 'lease-renew-deadline': r, 'lease-retry-period': p };
    expect(() => parseLeaseFlags(f, seconds)).toThrow(KubeConfigError);
    expect(() => parseLeaseFlags(f, seconds)).toThrow('lease duration > renew deadline > retry period > 0');
  });

  it("passes the program's parser error through (it names the flag)", () => {
    expect(() => parseLeaseFlags({ ...defaults('l'), 'lease-duration': 'soon' }, seconds)).toThrow('--lease-duration');
  });
});
