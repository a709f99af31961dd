// Multiport grouping: one `-m multiport --dports` rule holds at most 15 port references, where a
// range counts as two and a single port as one. Groups are filled greedily, in port order.
import type { PortRange } from '@minimesh/config';

export const MULTIPORT_LIMIT = 15;

/** Ranges → groups of multiport entries ("443", "1000:2000"), each group within the limit. */
export function toMultiportGroups(ranges: readonly PortRange[]): string[][] {
  const groups: string[][] = [];
  let current: string[] = [];
  let weight = 0;
  for (const r of ranges) {
    const entry = r.lo === r.hi ? String(r.lo) : `${r.lo}:${r.hi}`;
    const w = r.lo === r.hi ? 1 : 2;
    if (weight + w > MULTIPORT_LIMIT) {
      groups.push(current);
      current = [];
      weight = 0;
    }
    current.push(entry);
    weight += w;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
