// net.IPNetwork (the proxy API's form) → @minimesh/config's IpNetwork, for membership checks.
import { ipNetwork, type IpNetwork } from '@minimesh/config';
import type { net } from '@minimesh/proto';

export function fromIpNetwork(n: net.IPNetwork | undefined): IpNetwork {
  const ip = n?.ip?.ip;
  if (!ip) throw new Error('network without an address');
  if (ip.$case === 'ipv4') return ipNetwork({ family: 4, value: BigInt(ip.value >>> 0) }, n.prefixLen);
  const value = (BigInt.asUintN(64, ip.value.first) << 64n) | BigInt.asUintN(64, ip.value.last);
  return ipNetwork({ family: 6, value }, n.prefixLen);
}
