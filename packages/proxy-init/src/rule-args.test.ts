import { describe, expect, it } from 'vitest';
import { parseRuleArgs } from './options.js';
import { SEED, SEED_ARGV } from './testdata/seed.js';

describe('parseRuleArgs: an injected pod’s proxy-init arguments, for another program that writes the rules', () => {
  it('reads the seed’s arguments as proxy-init does', () => {
    expect(parseRuleArgs([...SEED_ARGV, '--iptables-mode', 'nft'])).toEqual({
      options: SEED,
      mode: 'nft',
      closeWaitTimeoutSecs: 0,
    });
  });

  it.each([
    [['--netns', '/proc/1/ns/net'], /Unknown option '--netns'/],
    [['--cleanup'], /Unknown option '--cleanup'/],
    [['--simulate'], /Unknown option '--simulate'/],
    [['--log-level', 'debug'], /Unknown option '--log-level'/],
    [['extra'], /unexpected argument "extra"/],
    [['--proxy-uid', 'root'], /--proxy-uid/],
    [['--iptables-mode', 'ebpf'], /--iptables-mode/],
  ])('refuses %j: only the rule flags, with valid values', (extra, message) => {
    expect(() => parseRuleArgs([...SEED_ARGV, ...extra])).toThrow(message);
  });
});
