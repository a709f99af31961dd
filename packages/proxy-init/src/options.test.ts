import { parseFlags, renderHelp } from '@minimesh/runtime';
import { describe, expect, it } from 'vitest';
import { parseMode } from './binaries.js';
import { FLAGS, normalizeArgv, parseCommand, PROGRAM } from './options.js';
import { LINKERD_PROXY_INIT_ARGS } from '@minimesh/test-support/linkerd';

function command(argv: string[]) {
  const parsed = parseFlags(PROGRAM, FLAGS, normalizeArgv(argv));
  if ('help' in parsed) throw new Error('unexpected help');
  return parseCommand(parsed.values);
}

describe('parseCommand', () => {
  it("reads Linkerd's proxy-init arguments", () => {
    const cmd = command([...LINKERD_PROXY_INIT_ARGS]);
    expect(cmd.options).toEqual({
      incomingProxyPort: 4143,
      outgoingProxyPort: 4140,
      proxyUid: 2102,
      proxyGid: undefined,
      inboundPortsToIgnore: [
        { lo: 4190, hi: 4190 },
        { lo: 4191, hi: 4191 },
        { lo: 4567, hi: 4567 },
        { lo: 4568, hi: 4568 },
      ],
      outboundPortsToIgnore: [
        { lo: 443, hi: 443 },
        { lo: 6443, hi: 6443 },
      ],
      portsToRedirect: [],
      subnetsToIgnore: [],
      ipv6: false,
    });
    expect(cmd.mode).toBe('legacy');
    expect(cmd.simulate).toBe(false);
  });

  it('accepts Go-style booleans, short flags and repeated list flags', () => {
    const cmd = command([
      '--ipv6',
      '--simulate',
      '-w',
      '-p',
      '5143',
      '-u',
      '0',
      '--outbound-ports-to-ignore',
      '443',
      '--outbound-ports-to-ignore',
      '443,25-26',
    ]);
    expect(cmd.options.ipv6).toBe(true);
    expect(cmd.simulate).toBe(true);
    expect(cmd.wait).toBe(true);
    expect(cmd.options.incomingProxyPort).toBe(5143);
    expect(cmd.options.proxyUid).toBe(0);
    expect(cmd.options.outboundPortsToIgnore).toEqual([
      { lo: 25, hi: 26 },
      { lo: 443, hi: 443 },
    ]);
  });

  it.each([
    [
      ['--incoming-proxy-port', '70000'],
      '--incoming-proxy-port: "70000" is not valid: expected a TCP port number 1-65535',
    ],
    [['--outgoing-proxy-port', '0'], '--outgoing-proxy-port: "0" is not valid: expected a TCP port number 1-65535'],
    [
      ['--inbound-ports-to-ignore', '4190,99999'],
      '--inbound-ports-to-ignore: "99999" is not valid: expected a TCP port number 1-65535',
    ],
    [
      ['--outbound-ports-to-ignore', '20-10'],
      '--outbound-ports-to-ignore: "20-10" is not valid: expected a range whose start is not above its end',
    ],
    [['--outbound-ports-to-ignore', '1-2-3'], '--outbound-ports-to-ignore: "1-2-3" is not valid: expected a port'],
    [['--subnets-to-ignore', '10.0.0.0/33'], '--subnets-to-ignore: "10.0.0.0/33" is not valid: expected a CIDR'],
    [['--iptables-mode', 'ebpf'], '--iptables-mode: "ebpf" is not valid: expected legacy, nft or plain'],
    [['--proxy-uid', 'proxy'], '--proxy-uid: "proxy" is not valid: expected a numeric id'],
    [['--ipv6=maybe'], '--ipv6: "maybe" is not valid: expected true or false'],
    [['--timeout-close-wait-secs', '1.5'], '--timeout-close-wait-secs: "1.5" is not valid'],
    [
      ['--netns', '/nonexistent/netns'],
      '--netns: "/nonexistent/netns" is not valid: expected the path of an existing network namespace file',
    ],
    [['--log-format', 'xml'], '--log-format: "xml" is not valid: expected plain or json'],
  ])('refuses %j', (argv, message) => {
    expect(() => command(argv)).toThrow(message);
  });
});

describe('parseMode', () => {
  const none = { iptablesMode: '', firewallBinPath: '', firewallSavePath: '' };
  it.each([
    [{ ...none }, 'legacy'],
    [{ ...none, iptablesMode: 'nft' }, 'nft'],
    [{ ...none, iptablesMode: 'plain', firewallBinPath: 'iptables-nft' }, 'plain'],
    [{ ...none, firewallBinPath: 'iptables-legacy' }, 'legacy'],
    [{ ...none, firewallBinPath: 'iptables-nft', firewallSavePath: 'iptables-nft-save' }, 'nft'],
    [{ ...none, firewallBinPath: '/sbin/iptables' }, 'plain'],
    [{ ...none, firewallSavePath: 'iptables-nft-save' }, 'nft'],
  ])('%o → %s', (flags, mode) => expect(parseMode(flags)).toBe(mode));
  it.each([
    [
      { ...none, firewallBinPath: 'nft' },
      '--firewall-bin-path: "nft" is not valid: expected iptables-legacy, iptables-nft or iptables',
    ],
    [
      { ...none, firewallBinPath: 'iptables-nft', firewallSavePath: 'iptables-legacy-save' },
      '--firewall-save-bin-path: "iptables-legacy-save" is not valid: expected iptables-nft-save',
    ],
  ])('refuses %o', (flags, message) => expect(() => parseMode(flags)).toThrow(message));
});

describe('--help', () => {
  it('says --subnets-to-ignore matches the source of inbound connections', () => {
    const help = renderHelp(PROGRAM, FLAGS);
    expect(help).toMatch(/--subnets-to-ignore <value>\s+CIDRs matched on the SOURCE of inbound connections/);
  });
});
