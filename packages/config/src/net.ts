// IP addresses, CIDRs and "ip:port" keys as numbers and text: the one copy. IPv4 and IPv6 both become
// a bigint, so containment and masking are one comparison; text out is what iptables-save and RFC 5952
// print (dotted quads; lower-case IPv6 with the longest run of zero groups as "::").
import type { Cidr } from './parse.js';

export type IpFamily = 4 | 6;

export interface IpValue {
  family: IpFamily;
  value: bigint;
}

/**
 * Dotted-quad IPv4 to its value; undefined for anything else. Agrees with node:net's isIPv4 (no
 * leading zeros, no spaces). A character loop, not split and regular expressions: the proxy parses
 * every inbound client's address with it.
 */
function ipv4(text: string): bigint | undefined {
  let value = 0;
  let octet = -1;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46 /* . */) {
      if (octet < 0 || ++dots > 3) return undefined;
      value = value * 256 + octet;
      octet = -1;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return undefined;
      octet = (octet < 0 ? 0 : octet * 10) + (c - 48);
      if (++digits > 3 || octet > 255) return undefined;
    } else return undefined;
  }
  if (dots !== 3 || octet < 0) return undefined;
  return BigInt(value * 256 + octet);
}

function ipv6(text: string): bigint | undefined {
  if (!text.includes(':')) return undefined;
  const dbl = text.indexOf('::');
  if (dbl >= 0 && text.indexOf('::', dbl + 1) >= 0) return undefined;
  const head = dbl >= 0 ? text.slice(0, dbl) : text;
  const tail = dbl >= 0 ? text.slice(dbl + 2) : '';
  const groups = (s: string): string[] | undefined => {
    if (s === '') return [];
    const g = s.split(':');
    const last = g[g.length - 1] as string;
    if (!last.includes('.')) return g;
    // An embedded IPv4 tail (::ffff:10.1.2.3) is two groups.
    const v4 = ipv4(last);
    if (v4 === undefined) return undefined;
    return [...g.slice(0, -1), ((v4 >> 16n) & 0xffffn).toString(16), (v4 & 0xffffn).toString(16)];
  };
  const h = groups(head);
  const t = groups(tail);
  if (!h || !t) return undefined;
  const missing = 8 - h.length - t.length;
  if (dbl < 0 ? missing !== 0 : missing < 1) return undefined;
  let v = 0n;
  for (const g of [...h, ...Array<string>(dbl < 0 ? 0 : missing).fill('0'), ...t]) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  return v;
}

/** "10.1.2.3" or "fd00::1" (also "::ffff:1.2.3.4") as a number; undefined when it is not an IP literal. */
export function parseIp(text: string): IpValue | undefined {
  const v4 = ipv4(text);
  if (v4 !== undefined) return { family: 4, value: v4 };
  const v6 = ipv6(text);
  if (v6 !== undefined) return { family: 6, value: v6 };
  return undefined;
}

/**
 * An IPv4-mapped IPv6 address (::ffff:10.1.2.3, as a dual-stack socket reports an IPv4 peer) as the
 * IPv4 address it carries; any other address as it is.
 */
export function unmapIpv4(ip: IpValue): IpValue {
  return ip.family === 6 && ip.value >> 32n === 0xffffn ? { family: 4, value: ip.value & 0xffffffffn } : ip;
}

/** Dotted quad, or RFC 5952 IPv6 (lower case, the longest run of two or more zero groups as "::"). */
export function formatIp(ip: IpValue): string {
  if (ip.family === 4) {
    const n = Number(ip.value & 0xffffffffn);
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  }
  const groups: string[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(((ip.value >> shift) & 0xffffn).toString(16));
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

const bitsOf = (family: IpFamily): number => (family === 4 ? 32 : 128);

function mask(value: bigint, prefix: number, bits: number): bigint {
  if (prefix <= 0) return 0n;
  return value & (((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix));
}

/** A network as numbers, for membership checks on a hot path: its address with the host bits cleared. */
export interface IpNetwork extends IpValue {
  prefix: number;
}

/** The network of `prefix` bits around ip (host bits cleared); throws when the prefix does not fit the family. */
export function ipNetwork(ip: IpValue, prefix: number): IpNetwork {
  const bits = bitsOf(ip.family);
  if (prefix > bits) throw new Error(`IPv${ip.family} prefix /${prefix} is longer than ${bits}`);
  if (!Number.isInteger(prefix) || prefix < 0) throw new Error(`/${prefix} is not a prefix length`);
  return { family: ip.family, value: mask(ip.value, prefix, bits), prefix };
}

/** The CIDR as numbers (parse it once, test addresses against it many times). */
export function toIpNetwork(cidr: Cidr): IpNetwork {
  const ip = parseIp(cidr.address);
  if (!ip) throw new Error(`"${cidr.address}" is not an IP address`);
  return ipNetwork(ip, cidr.prefix);
}

/** Whether ip is inside the network; false across families. */
export function ipNetworkContains(net: IpNetwork, ip: IpValue): boolean {
  if (ip.family !== net.family) return false;
  if (net.prefix === 0) return true;
  const shift = BigInt(bitsOf(net.family) - net.prefix);
  return ip.value >> shift === net.value >> shift;
}

/** The network number of a CIDR (its address with the host bits cleared). */
export function cidrNetwork(cidr: Cidr): IpValue {
  const { family, value } = toIpNetwork(cidr);
  return { family, value };
}

/** Whether ip is inside cidr; false across families, undefined when ip is not an IP literal. */
export function cidrContains(cidr: Cidr, ip: string | IpValue): boolean | undefined {
  const v = typeof ip === 'string' ? parseIp(ip) : ip;
  if (!v) return undefined;
  if (v.family !== cidr.family) return false;
  return ipNetworkContains(toIpNetwork(cidr), v);
}

/** "10.1.2.3/8" → "10.0.0.0/8"; "FD00:0::1/16" → "fd00::/16": the form iptables-save prints. */
export function toNetworkCidr(cidr: Cidr): string {
  return `${formatIp(cidrNetwork(cidr))}/${cidr.prefix}`;
}

/** "10.0.0.0/8" as written in the Cidr (address/prefix). */
export function formatCidr(cidr: Cidr): string {
  return `${cidr.address}/${cidr.prefix}`;
}

/** The "ip:port" key of an endpoint: "10.1.2.3:80", "[fd00::1]:80". */
export function addressKey(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}
