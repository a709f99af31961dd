// CIDR normalisation: iptables stores the network address (10.1.2.3/8 is saved as 10.0.0.0/8, IPv6 in
// RFC 5952 form), so the plan uses that form too and its comments match what iptables-save shows.
import type { Cidr } from '@minimesh/config';

function v6ToBytes(address: string): number[] {
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const b = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}

function mask(bytes: number[], prefix: number): number[] {
  return bytes.map((b, i) => {
    const bits = Math.max(0, Math.min(8, prefix - i * 8));
    return b & ((0xff << (8 - bits)) & 0xff);
  });
}

/** "10.1.2.3/8" → "10.0.0.0/8"; "FD00:0::1/16" → "fd00::/16". */
export function toNetworkCidr(cidr: Cidr): string {
  if (cidr.family === 4) {
    const bytes = mask(cidr.address.split('.').map(Number), cidr.prefix);
    return `${bytes.join('.')}/${cidr.prefix}`;
  }
  const bytes = mask(v6ToBytes(cidr.address), cidr.prefix);
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  // The WHATWG URL parser prints IPv6 in its canonical compressed form.
  const canonical = new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
  return `${canonical}/${cidr.prefix}`;
}
