// IP addresses and CIDR networks as numbers, for "is this client in that network" checks.
import { isIPv4, isIPv6 } from 'node:net';

export interface IpNet {
  family: 4 | 6;
  /** The network address, masked. */
  base: bigint;
  prefix: number;
}

/** The address as a bigint (IPv4-mapped IPv6 addresses are treated as IPv4); undefined when not an IP. */
export function ipToBigint(ip: string): { family: 4 | 6; value: bigint } | undefined {
  const quad = parseIpv4(ip);
  if (quad !== undefined) return { family: 4, value: BigInt(quad) };
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const text = mapped?.[1] ?? ip;
  if (isIPv4(text)) return { family: 4, value: BigInt(parseIpv4(text) ?? 0) };
  if (!isIPv6(text)) return undefined;
  let t = text;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(t);
  if (v4?.[1]) {
    const o = v4[1].split('.').map(Number) as [number, number, number, number];
    t = t.slice(0, -v4[1].length) + `${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
  }
  const [head = '', tail] = t.split('::');
  const h = head ? head.split(':') : [];
  const tl = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const parts = [...h, ...(tail === undefined ? [] : Array<string>(8 - h.length - tl.length).fill('0')), ...tl];
  return { family: 6, value: parts.reduce((acc, x) => (acc << 16n) | BigInt(parseInt(x, 16)), 0n) };
}

/** Dotted-quad IPv4 to its 32-bit value (no leading zeros, as isIPv4); undefined for anything else. */
function parseIpv4(ip: string): number | undefined {
  let value = 0;
  let octet = -1;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
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
  return value * 256 + octet;
}

/** "10.0.0.0/8" → IpNet; undefined when malformed. */
export function parseIpNet(cidr: string): IpNet | undefined {
  const [addr = '', prefixText] = cidr.split('/');
  const ip = ipToBigint(addr);
  if (!ip) return undefined;
  const bits = ip.family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits) return undefined;
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
  return { family: ip.family, base: ip.value & mask, prefix };
}

export function netContains(net: IpNet, ip: { family: 4 | 6; value: bigint }): boolean {
  if (net.family !== ip.family) return false;
  const bits = net.family === 4 ? 32 : 128;
  if (net.prefix === 0) return true;
  const shift = BigInt(bits - net.prefix);
  return ip.value >> shift === net.base >> shift;
}

export function inNetworks(ip: string, cidrs: readonly string[]): boolean {
  const v = ipToBigint(ip);
  if (!v) return false;
  return cidrs.some((c) => {
    const n = parseIpNet(c);
    return n !== undefined && netContains(n, v);
  });
}
