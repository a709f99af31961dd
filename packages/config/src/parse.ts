// Parsers for untrusted configuration text. Each takes the field name so errors can say where.
import { isIP } from 'node:net';
import { ConfigError } from './errors.js';

export interface PortRange {
  /** inclusive */
  lo: number;
  /** inclusive; equal to lo for a single port */
  hi: number;
}

/** A TCP port 1..65535 (or 0..65535 with allowZero). */
export function parsePort(field: string, value: string | number, opts: { allowZero?: boolean } = {}): number {
  const text = String(value).trim();
  const min = opts.allowZero ? 0 : 1;
  if (!/^\d+$/.test(text)) throw new ConfigError(field, value, `a TCP port number ${min}-65535`);
  const n = Number(text);
  if (n < min || n > 65535) throw new ConfigError(field, value, `a TCP port number ${min}-65535`);
  return n;
}

/**
 * "4190,4191,1000-2000" → ranges, sorted, duplicates and overlaps folded.
 * Accepts single ports and inclusive ranges "lo-hi"; an empty string is an empty list.
 */
export function parsePortRanges(field: string, value: string | readonly string[]): PortRange[] {
  const items = (Array.isArray(value) ? value.join(',') : (value as string))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const ranges: PortRange[] = [];
  for (const item of items) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(item);
    if (!m) throw new ConfigError(field, item, 'a port (e.g. 4190) or an inclusive range lo-hi (e.g. 4000-4010)');
    const lo = parsePort(field, m[1] as string);
    const hi = m[2] === undefined ? lo : parsePort(field, m[2]);
    if (hi < lo) throw new ConfigError(field, item, `a range whose start is not above its end (${lo} > ${hi})`);
    ranges.push({ lo, hi });
  }
  return foldRanges(ranges);
}

/** Sorts and merges overlapping ranges; adjacent single ports stay separate so listings read naturally. */
export function foldRanges(ranges: readonly PortRange[]): PortRange[] {
  const sorted = [...ranges].sort((a, b) => a.lo - b.lo || a.hi - b.hi);
  const out: PortRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.lo <= last.hi) last.hi = Math.max(last.hi, r.hi);
    else out.push({ ...r });
  }
  return out;
}

/** Renders ranges as "4190,4191,1000-2000". */
export function formatPortRanges(ranges: readonly PortRange[]): string {
  return ranges.map((r) => (r.lo === r.hi ? String(r.lo) : `${r.lo}-${r.hi}`)).join(',');
}

export function portInRanges(port: number, ranges: readonly PortRange[]): boolean {
  return ranges.some((r) => port >= r.lo && port <= r.hi);
}

export interface Cidr {
  address: string;
  prefix: number;
  family: 4 | 6;
}

/** A dotted IPv4 netmask ("255.255.0.0") as a prefix length; NaN unless its ones are contiguous. */
function netmaskPrefix(text: string): number {
  if (isIP(text) !== 4) return NaN;
  const bits = text
    .split('.')
    .map((o) => Number(o).toString(2).padStart(8, '0'))
    .join('');
  return /^1*0*$/.test(bits) ? (bits.indexOf('0') === -1 ? 32 : bits.indexOf('0')) : NaN;
}

/**
 * "10.0.0.0/8" or "fd00::/8" (or "10.0.0.0/255.0.0.0", as iptables-save may print a netmask).
 * A bare address is taken as a host route (/32 or /128).
 */
export function parseCidr(field: string, value: string): Cidr {
  const text = value.trim();
  const [address = '', prefixText, extra] = text.split('/');
  const family = isIP(address);
  const max = family === 6 ? 128 : 32;
  const prefix =
    prefixText === undefined
      ? max
      : /^\d+$/.test(prefixText)
        ? Number(prefixText)
        : family === 4
          ? netmaskPrefix(prefixText)
          : NaN;
  if (extra !== undefined || family === 0 || !(prefix >= 0 && prefix <= max)) {
    throw new ConfigError(field, value, 'a CIDR such as 10.0.0.0/8 or fd00::/8');
  }
  return { address, prefix, family: family as 4 | 6 };
}

export function parseCidrList(field: string, value: string | readonly string[]): Cidr[] {
  const items = (Array.isArray(value) ? value.join(',') : (value as string))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return items.map((item) => parseCidr(field, item));
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go-style durations: "24h", "1h30m", "20s", "500ms", and "0" as Go's time.ParseDuration takes it. Returns milliseconds. */
export function parseDuration(field: string, value: string | number): number {
  if (typeof value === 'number') {
    if (Number.isFinite(value) && value >= 0) return value;
    throw new ConfigError(field, value, 'a non-negative duration such as 20s, 24h or 1h30m');
  }
  const text = value.trim();
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * (UNITS[m[2] as string] as number);
    matched = re.lastIndex;
  }
  if (text === '' || matched !== text.length) {
    throw new ConfigError(field, value, 'a duration such as 20s, 24h or 1h30m (units ms, s, m, h)');
  }
  return total;
}

export function parseBoolean(field: string, value: string | boolean): boolean {
  if (typeof value === 'boolean') return value;
  const text = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'enabled'].includes(text)) return true;
  if (['false', '0', 'no', 'disabled'].includes(text)) return false;
  throw new ConfigError(field, value, 'true or false');
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function parseLogLevel(field: string, value: string): LogLevel {
  const text = value.trim().toLowerCase();
  if ((LOG_LEVELS as readonly string[]).includes(text)) return text as LogLevel;
  throw new ConfigError(field, value, `one of ${LOG_LEVELS.join(', ')}`);
}

export type LogFormat = 'plain' | 'json';
export function parseLogFormat(field: string, value: string): LogFormat {
  const text = value.trim().toLowerCase();
  if (text === 'plain' || text === 'json') return text;
  throw new ConfigError(field, value, 'plain or json');
}
