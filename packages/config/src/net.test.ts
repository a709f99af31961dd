import { isIPv4 } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  addressKey,
  cidrContains,
  formatIp,
  ipNetwork,
  ipNetworkContains,
  parseIp,
  toIpNetwork,
  toNetworkCidr,
  unmapIpv4,
} from './net.js';
import { parseCidr } from './parse.js';

describe('parseIp / formatIp', () => {
  it.each([
    ['10.1.2.3', 4, '10.1.2.3'],
    ['fd00::1', 6, 'fd00::1'],
    ['FD00:0:0:0:0:0:0:1', 6, 'fd00::1'],
    ['::', 6, '::'],
    ['::ffff:10.1.2.3', 6, '::ffff:a01:203'],
    ['2001:db8:0:0:1:0:0:1', 6, '2001:db8::1:0:0:1'],
    ['1:0:0:2:0:0:0:3', 6, '1:0:0:2::3'],
    ['fe80::1:2:3:4:5:6', 6, 'fe80:0:1:2:3:4:5:6'],
  ])('%s is IPv%d, printed %s', (text, family, printed) => {
    const ip = parseIp(text);
    expect(ip?.family).toBe(family);
    expect(formatIp(ip!)).toBe(printed);
  });
  it.each(['10.1.2', '10.1.2.300', '1::2::3', '1:2:3:4:5:6:7:8:9', 'web', '', '12345::1'])('%s is not an IP', (text) =>
    expect(parseIp(text)).toBeUndefined(),
  );
});

describe('parseIp as numbers', () => {
  it.each([
    ['0.0.0.0', 4, 0n],
    ['10.0.0.9', 4, 0x0a000009n],
    ['255.255.255.255', 4, 0xffffffffn],
    ['::1', 6, 1n],
    ['fd00::1:2', 6, (0xfd00n << 112n) | 0x10002n],
    ['::ffff:0a01:0203', 6, 0xffff0a010203n],
  ])('%s → IPv%s %s', (ip, family, value) => expect(parseIp(ip)).toEqual({ family, value }));

  it.each([
    '',
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '01.2.3.4',
    '1..2.3',
    '1.2.3.',
    '.1.2.3',
    '1.2.3.4 ',
    'a.b.c.d',
    'web',
  ])('%j is not an address (as node:net says)', (ip) => {
    expect(isIPv4(ip)).toBe(false);
    expect(parseIp(ip)).toBeUndefined();
  });

  it('unmapIpv4 turns ::ffff:a.b.c.d into IPv4 and leaves other addresses alone', () => {
    expect(unmapIpv4(parseIp('::ffff:10.1.2.3')!)).toEqual({ family: 4, value: 0x0a010203n });
    expect(unmapIpv4(parseIp('::1')!)).toEqual({ family: 6, value: 1n });
    expect(unmapIpv4(parseIp('10.1.2.3')!)).toEqual({ family: 4, value: 0x0a010203n });
  });
});

describe('IpNetwork', () => {
  it('contains by prefix, per family', () => {
    const net = toIpNetwork(parseCidr('t', '10.0.0.0/8'));
    expect(ipNetworkContains(net, parseIp('10.200.3.4')!)).toBe(true);
    expect(ipNetworkContains(net, parseIp('11.0.0.1')!)).toBe(false);
    expect(ipNetworkContains(toIpNetwork(parseCidr('t', '::/0')), parseIp('10.0.0.1')!)).toBe(false);
    expect(ipNetworkContains(toIpNetwork(parseCidr('t', '0.0.0.0/0')), parseIp('10.0.0.1')!)).toBe(true);
  });
  it('clears the host bits and refuses a prefix longer than the family', () => {
    expect(ipNetwork(parseIp('10.1.2.3')!, 16)).toEqual({ family: 4, value: 0x0a010000n, prefix: 16 });
    expect(() => ipNetwork(parseIp('10.1.2.3')!, 33)).toThrow('IPv4 prefix /33');
    expect(() => ipNetwork(parseIp('::1')!, 129)).toThrow('IPv6 prefix /129');
  });
});

describe('CIDRs', () => {
  it.each([
    ['10.0.0.0/8', '10.200.1.1', true],
    ['10.0.0.0/8', '11.0.0.1', false],
    ['0.0.0.0/0', '192.168.1.1', true],
    ['fd00::/8', 'fd12::5', true],
    ['fd00::/8', '10.0.0.1', false],
    ['10.0.0.0/255.255.0.0', '10.0.200.1', true],
    ['10.0.0.0/255.255.0.0', '10.1.0.1', false],
  ])('%s contains %s: %s', (cidr, ip, yes) => expect(cidrContains(parseCidr('t', cidr), ip)).toBe(yes));
  it('normalises to the network form iptables-save prints', () => {
    expect(toNetworkCidr(parseCidr('t', '10.1.2.3/8'))).toBe('10.0.0.0/8');
    expect(toNetworkCidr(parseCidr('t', 'FD00:0::1/16'))).toBe('fd00::/16');
    expect(toNetworkCidr(parseCidr('t', '192.168.1.7'))).toBe('192.168.1.7/32');
  });
  it('refuses a netmask with holes', () => expect(() => parseCidr('--x', '10.0.0.0/255.0.255.0')).toThrow('--x'));
});

describe('addressKey', () => {
  it('brackets IPv6', () => {
    expect(addressKey('10.1.2.3', 80)).toBe('10.1.2.3:80');
    expect(addressKey('fd00::1', 80)).toBe('[fd00::1]:80');
  });
});

describe('toNetworkCidr (proxy-init writes these into its rules)', () => {
  it.each([
    [{ address: '10.1.2.3', prefix: 8, family: 4 as const }, '10.0.0.0/8'],
    [{ address: '10.1.2.3', prefix: 32, family: 4 as const }, '10.1.2.3/32'],
    [{ address: '172.16.255.1', prefix: 12, family: 4 as const }, '172.16.0.0/12'],
    [{ address: 'FD00:0:0::7', prefix: 16, family: 6 as const }, 'fd00::/16'],
    [{ address: '2001:db8:1:2::1', prefix: 48, family: 6 as const }, '2001:db8:1::/48'],
    [{ address: '::1', prefix: 128, family: 6 as const }, '::1/128'],
    [{ address: '::ffff:10.1.2.3', prefix: 120, family: 6 as const }, '::ffff:a01:200/120'],
  ])('%o → %s', (cidr, want) => expect(toNetworkCidr(cidr)).toBe(want));
});
