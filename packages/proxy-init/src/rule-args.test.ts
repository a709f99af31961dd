import { describe, expect, it } from 'vitest';
import { parsePortRanges } from '@minimesh/config';
import { LINKERD_PROXY_INIT_ARGS } from '@minimesh/test-support/linkerd';
import { parseRuleArgs } from './options.js';
import type { ProxyInitOptions } from './plan.js';

// Linkerd's proxy-init arguments, parsed.
const LINKERD: ProxyInitOptions = {
  incomingProxyPort: 4143,
  outgoingProxyPort: 4140,
  proxyUid: 2102,
  proxyGid: undefined,
  inboundPortsToIgnore: parsePortRanges('in', '4190,4191,4567,4568'),
  outboundPortsToIgnore: parsePortRanges('out', '443,6443'),
  portsToRedirect: [],
  subnetsToIgnore: [],
  ipv6: false,
};

describe('parseRuleArgs: an injected pod’s proxy-init arguments, for another program that writes the rules', () => {
  it('reads Linkerd’s proxy-init arguments as proxy-init does', () => {
    expect(parseRuleArgs([...LINKERD_PROXY_INIT_ARGS, '--iptables-mode', 'nft'])).toEqual({
      options: LINKERD,
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
    expect(() => parseRuleArgs([...LINKERD_PROXY_INIT_ARGS, ...extra])).toThrow(message);
  });
});
