import { describe, expect, it } from 'vitest';
import { addressKey, cidrContains, formatIp, parseIp, toNetworkCidr } from './net.js';
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
