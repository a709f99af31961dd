// Conversions between dotted/colon IP strings and the proxy API's net.IPAddress / net.TcpAddress.
import { isIPv4, isIPv6 } from 'node:net';
import type { IPAddress, TcpAddress } from './gen/net.js';

/** Parses "10.1.2.3" or "fd00::1" into a net.IPAddress; throws on anything else. */
export function toIpAddress(ip: string): IPAddress {
  if (isIPv4(ip)) {
    const n = ip.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
    return { ip: { $case: 'ipv4', value: n } };
  }
  if (isIPv6(ip)) {
    const hextets = expandIpv6(ip);
    const big = (parts: number[]) => parts.reduce((acc, h) => (acc << 16n) | BigInt(h), 0n);
    return { ip: { $case: 'ipv6', value: { first: big(hextets.slice(0, 4)), last: big(hextets.slice(4)) } } };
  }
  throw new Error(`"${ip}" is not an IPv4 or IPv6 address`);
}

/** Renders a net.IPAddress as a string ("10.1.2.3", "fd00::1"); undefined when it carries no address. */
export function fromIpAddress(addr: IPAddress | undefined): string | undefined {
  const ip = addr?.ip;
  if (!ip) return undefined;
  if (ip.$case === 'ipv4') {
    const n = ip.value >>> 0;
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  }
  const hextets: string[] = [];
  for (const half of [ip.value.first, ip.value.last]) {
    for (let shift = 48n; shift >= 0n; shift -= 16n) hextets.push(((half >> shift) & 0xffffn).toString(16));
  }
  return compressIpv6(hextets);
}

export function toTcpAddress(ip: string, port: number): TcpAddress {
  return { ip: toIpAddress(ip), port };
}

/** "10.1.2.3:80" or "[fd00::1]:80". */
export function fromTcpAddress(addr: TcpAddress | undefined): { ip: string; port: number } | undefined {
  const ip = fromIpAddress(addr?.ip);
  return ip === undefined || addr === undefined ? undefined : { ip, port: addr.port };
}

function expandIpv6(ip: string): number[] {
  let text = ip;
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hextets.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const o = v4[1].split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -v4[1].length) + `${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((x) => parseInt(x, 16));
}

function compressIpv6(hextets: string[]): string {
  // Longest run of zeros (length ≥ 2) becomes "::", as RFC 5952 says.
  let best = -1,
    bestLen = 0;
  for (let i = 0; i < 8;) {
    if (hextets[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && hextets[j] === '0') j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (best < 0) return hextets.join(':');
  return `${hextets.slice(0, best).join(':')}::${hextets.slice(best + bestLen).join(':')}`;
}
