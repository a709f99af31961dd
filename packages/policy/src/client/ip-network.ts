// net.IPNetwork (the proxy API's form) → IpNet, for membership checks.
import type { net } from '@minimesh/proto';
import type { IpNet } from '../ip-match.js';

export function fromIpNetwork(n: net.IPNetwork | undefined): IpNet {
  const ip = n?.ip?.ip;
  if (!ip) throw new Error('network without an address');
  if (ip.$case === 'ipv4') {
    const prefix = n.prefixLen;
    if (prefix > 32) throw new Error(`IPv4 prefix /${prefix} is longer than 32`);
    const value = BigInt(ip.value >>> 0);
    const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(32 - prefix);
    return { family: 4, base: value & mask, prefix };
  }
  const prefix = n.prefixLen;
  if (prefix > 128) throw new Error(`IPv6 prefix /${prefix} is longer than 128`);
  const value = (BigInt.asUintN(64, ip.value.first) << 64n) | BigInt.asUintN(64, ip.value.last);
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(128 - prefix);
  return { family: 6, base: value & mask, prefix };
}
