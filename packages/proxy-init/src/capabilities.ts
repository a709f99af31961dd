// Does this process hold CAP_NET_ADMIN? Read from /proc/self/status (CapEff), so a missing capability
// is reported up front instead of as an obscure iptables "Permission denied".
import { readFileSync } from 'node:fs';

export const CAP_NET_ADMIN = 12;

export function effectiveCapabilities(status = readFileSync('/proc/self/status', 'utf8')): bigint {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(status);
  return m ? BigInt(`0x${m[1]}`) : 0n;
}

export function hasCapability(cap: number, status?: string): boolean {
  return ((effectiveCapabilities(status) >> BigInt(cap)) & 1n) === 1n;
}
