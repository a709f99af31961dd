// Conversions between IP text and the proxy API's net.IPAddress / net.TcpAddress. The arithmetic is
// @minimesh/config's (parseIp/formatIp): one copy of IPv4/IPv6 parsing in the repository.
import { formatIp, parseIp } from '@minimesh/config';
import type { IPAddress, TcpAddress } from './gen/net.js';

/** Parses "10.1.2.3" or "fd00::1" into a net.IPAddress; throws on anything else. */
export function toIpAddress(ip: string): IPAddress {
  const v = parseIp(ip);
  if (!v) throw new Error(`"${ip}" is not an IPv4 or IPv6 address`);
  if (v.family === 4) return { ip: { $case: 'ipv4', value: Number(v.value) } };
  return { ip: { $case: 'ipv6', value: { first: v.value >> 64n, last: v.value & 0xffff_ffff_ffff_ffffn } } };
}

/** Renders a net.IPAddress as a string ("10.1.2.3", "fd00::1"); undefined when it carries no address. */
export function fromIpAddress(addr: IPAddress | undefined): string | undefined {
  const ip = addr?.ip;
  if (!ip) return undefined;
  if (ip.$case === 'ipv4') return formatIp({ family: 4, value: BigInt(ip.value >>> 0) });
  return formatIp({
    family: 6,
    value: (BigInt.asUintN(64, ip.value.first) << 64n) | BigInt.asUintN(64, ip.value.last),
  });
}

export function toTcpAddress(ip: string, port: number): TcpAddress {
  return { ip: toIpAddress(ip), port };
}

/** "10.1.2.3:80" or "[fd00::1]:80". */
export function fromTcpAddress(addr: TcpAddress | undefined): { ip: string; port: number } | undefined {
  const ip = fromIpAddress(addr?.ip);
  return ip === undefined || addr === undefined ? undefined : { ip, port: addr.port };
}
