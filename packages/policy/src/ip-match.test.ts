// Addresses and networks as numbers: the IPv4 fast path agrees with node:net on what is an address.
import { isIPv4 } from 'node:net';
import { describe, expect, it } from 'vitest';
import { inNetworks, ipToBigint, netContains, parseIpNet } from './ip-match.js';

describe('ipToBigint', () => {
  it.each([
    ['0.0.0.0', 4, 0n],
    ['10.0.0.9', 4, 0x0a000009n],
    ['255.255.255.255', 4, 0xffffffffn],
    ['::ffff:10.1.2.3', 4, 0x0a010203n],
    ['::1', 6, 1n],
    ['fd00::1:2', 6, (0xfd00n << 112n) | 0x10002n],
    ['::ffff:0a01:0203', 6, 0xffff0a010203n],
  ])('%s → IPv%s %s', (ip, family, value) => {
    expect(ipToBigint(ip)).toEqual({ family, value });
  });

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
    expect(ipToBigint(ip)).toBeUndefined();
  });
});

describe('networks', () => {
  it('contains by prefix, per family', () => {
    const net = parseIpNet('10.0.0.0/8')!;
    expect(netContains(net, ipToBigint('10.200.3.4')!)).toBe(true);
    expect(netContains(net, ipToBigint('11.0.0.1')!)).toBe(false);
    expect(netContains(parseIpNet('::/0')!, ipToBigint('10.0.0.1')!)).toBe(false);
    expect(parseIpNet('10.0.0.0/33')).toBeUndefined();
    expect(parseIpNet('10.0.0/8')).toBeUndefined();
  });

  it('inNetworks checks a string against CIDRs', () => {
    expect(inNetworks('10.0.8.1', ['192.168.0.0/16', '10.0.0.0/8'])).toBe(true);
    expect(inNetworks('172.16.0.1', ['192.168.0.0/16', '10.0.0.0/8'])).toBe(false);
    expect(inNetworks('not-an-ip', ['0.0.0.0/0'])).toBe(false);
  });
});
