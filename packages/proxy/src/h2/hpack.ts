// HPACK (RFC 7541), the header compression of HTTP/2: a decoder of header blocks into flat
// [name, value, ...] arrays, and an encoder of such arrays, each with its own dynamic table. Strings are
// octets (one latin1 char per byte), as they are on the wire; no field is validated beyond what HPACK
// and the lower-case rule of RFC 9113 8.2.1 need.
import { HpackError, huffmanDecode, huffmanEncodeInto, huffmanLength } from './huffman.js';

export { HpackError };

/** RFC 7541 Appendix A; entry i at index i (index 0 is unused). */
// prettier-ignore
export const STATIC_TABLE: ReadonlyArray<readonly [string, string]> = [
  ['', ''], [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''],
  ['etag', ''], ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''],
  ['if-modified-since', ''], ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''],
  ['last-modified', ''], ['link', ''], ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''],
  ['proxy-authorization', ''], ['range', ''], ['referer', ''], ['refresh', ''], ['retry-after', ''],
  ['server', ''], ['set-cookie', ''], ['strict-transport-security', ''], ['transfer-encoding', ''],
  ['user-agent', ''], ['vary', ''], ['via', ''], ['www-authenticate', ''],
];
const STATIC_COUNT = 61;
const SNAME = STATIC_TABLE.map((e) => e[0]);
const SVALUE = STATIC_TABLE.map((e) => e[1]);
/**
 * name -> value -> lowest static index; name -> lowest static index. Two levels, not one map of
 * name + value: a key made per field is a new string to flatten and hash on every lookup (the encoder
 * spent most of its time there, 2026-11-30).
 */
const STATIC_FULL = new Map<string, Map<string, number>>();
const STATIC_NAME = new Map<string, number>();
for (let i = STATIC_COUNT; i >= 1; i--) {
  let byValue = STATIC_FULL.get(SNAME[i]!);
  if (byValue === undefined) STATIC_FULL.set(SNAME[i]!, (byValue = new Map()));
  byValue.set(SVALUE[i]!, i);
  STATIC_NAME.set(SNAME[i]!, i);
}

/** The size of a table entry (RFC 7541 4.1). */
const entrySize = (name: string, value: string): number => 32 + name.length + value.length;

/** True if `s` has an upper-case ASCII letter. */
function hasUpper(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}

/** False for a field whose first octet `b` indexes the static table, whose names are all lower case. */
function mayHaveUpper(b: number): boolean {
  return !(b & 0x80) || (b & 0x7f) > STATIC_COUNT;
}

/** A dynamic table (RFC 7541 2.3.2): a ring of entries, newest first in index order. */
class DynamicTable {
  names: string[] = new Array<string>(16);
  values: string[] = new Array<string>(16);
  /** Entries are numbered in insertion order; `first` is the oldest entry still in the table. */
  first = 0;
  next = 0;
  size = 0;
  constructor(public max: number) {}

  get length(): number {
    return this.next - this.first;
  }
  /** The ring slot of dynamic index `i` (0 = newest); `i` must be < length. */
  slot(i: number): number {
    return (this.next - 1 - i) & (this.names.length - 1);
  }
  /** The entries, newest first, as [name, value] pairs. */
  entries(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (let i = 0; i < this.length; i++) out.push([this.names[this.slot(i)]!, this.values[this.slot(i)]!]);
    return out;
  }
  /** Evicts the oldest entries until the size is at most `limit`; `onEvict` gets each entry's number. */
  evictTo(limit: number, onEvict?: (n: number, name: string, value: string) => void): void {
    const mask = this.names.length - 1;
    while (this.size > limit && this.next > this.first) {
      const s = this.first & mask;
      const name = this.names[s]!;
      const value = this.values[s]!;
      this.size -= entrySize(name, value);
      if (onEvict) onEvict(this.first, name, value);
      this.first++;
    }
  }
  /** Adds an entry (evicting as needed, RFC 7541 4.4); returns its number, or -1 if it did not fit. */
  add(name: string, value: string, onEvict?: (n: number, name: string, value: string) => void): number {
    const sz = entrySize(name, value);
    if (sz > this.max) {
      this.evictTo(0, onEvict);
      return -1;
    }
    this.evictTo(this.max - sz, onEvict);
    if (this.length === this.names.length) this.grow();
    const s = this.next & (this.names.length - 1);
    this.names[s] = name;
    this.values[s] = value;
    this.size += sz;
    return this.next++;
  }
  private grow(): void {
    const cap = this.names.length * 2;
    const names = new Array<string>(cap);
    const values = new Array<string>(cap);
    for (let n = this.first; n < this.next; n++) {
      const from = n & (this.names.length - 1);
      names[n & (cap - 1)] = this.names[from]!;
      values[n & (cap - 1)] = this.values[from]!;
    }
    this.names = names;
    this.values = values;
  }
}

/** Decodes header blocks of one connection direction. */
export class HpackDecoder {
  private readonly table: DynamicTable;
  private pos = 0;
  /** The limit was lowered below the table's size: the next block must start with a size update. */
  private updateRequired = false;
  /** After `decode`: the field numbers (i: fields[2i], fields[2i+1]) sent never-indexed, in order. */
  readonly neverIndexed: number[] = [];

  /** `maxTableSize`: the SETTINGS_HEADER_TABLE_SIZE this endpoint advertised (default 4096). */
  constructor(private maxTableSize = 4096) {
    this.table = new DynamicTable(maxTableSize);
  }

  /** The current dynamic table, newest first, as [name, value] pairs (for tests and diagnostics). */
  entries(): Array<[string, string]> {
    return this.table.entries();
  }
  /** The dynamic table's size (RFC 7541 4.1). */
  get tableSize(): number {
    return this.table.size;
  }
  /** A new SETTINGS_HEADER_TABLE_SIZE, once the peer acknowledged it; if lower, the next block must start with a size update. */
  setMaxTableSize(n: number): void {
    this.maxTableSize = n;
    if (n < this.table.max) this.updateRequired = true;
  }

  /**
   * Decodes one complete header block `block[start, end)`, appending name, value, ... to `fields`.
   * Throws HpackError: COMPRESSION_ERROR if the block cannot be decoded (the connection must end),
   * PROTOCOL_ERROR after the whole block was decoded if a name has upper case (a malformed request: the
   * table is still in step, so only the stream need be reset).
   */
  decode(block: Buffer, start = 0, end = block.length, fields: string[] = []): string[] {
    const t = this.table;
    this.pos = start;
    this.neverIndexed.length = 0;
    let first = true;
    let upper: string | undefined;
    while (this.pos < end) {
      const b = block[this.pos]!;
      if (this.updateRequired && (b & 0xe0) !== 0x20) {
        throw new HpackError(`HPACK: no dynamic table size update after the limit went down to ${this.maxTableSize}`);
      }
      let name: string;
      let value: string;
      if (b & 0x80) {
        const idx = this.integer(block, end, 7);
        if (idx === 0) throw new HpackError('HPACK: index 0 in an indexed field');
        if (idx <= STATIC_COUNT) {
          name = SNAME[idx]!;
          value = SVALUE[idx]!;
        } else {
          const s = this.dynamic(idx);
          name = t.names[s]!;
          value = t.values[s]!;
        }
      } else if ((b & 0xe0) === 0x20) {
        if (!first) throw new HpackError('HPACK: dynamic table size update after the start of a block');
        const n = this.integer(block, end, 5);
        if (n > this.maxTableSize) {
          throw new HpackError(`HPACK: dynamic table size update to ${n}, above the limit ${this.maxTableSize}`);
        }
        t.max = n;
        t.evictTo(n);
        this.updateRequired = false;
        continue;
      } else {
        const incremental = (b & 0xc0) === 0x40;
        if (b & 0x10 && !incremental) this.neverIndexed.push(fields.length >> 1);
        const idx = this.integer(block, end, incremental ? 6 : 4);
        if (idx === 0) name = this.string(block, end);
        else if (idx <= STATIC_COUNT) name = SNAME[idx]!;
        else name = t.names[this.dynamic(idx)]!;
        value = this.string(block, end);
        if (incremental) t.add(name, value);
      }
      first = false;
      if (upper === undefined && mayHaveUpper(b) && hasUpper(name)) upper = name;
      fields.push(name, value);
    }
    if (upper !== undefined) throw new HpackError(`HTTP/2: field name "${upper}" has upper case`, 'PROTOCOL_ERROR');
    return fields;
  }

  /** The ring slot of index `idx` (> 61). */
  private dynamic(idx: number): number {
    const k = idx - STATIC_COUNT - 1;
    if (k >= this.table.length) {
      throw new HpackError(`HPACK: index ${idx} is beyond the dynamic table (${this.table.length} entries)`);
    }
    return this.table.slot(k);
  }
  /** An integer with an N-bit prefix (RFC 7541 5.1) at `pos`; at most 2^31 - 1. */
  private integer(buf: Uint8Array, end: number, prefix: number): number {
    const mask = (1 << prefix) - 1;
    let v = buf[this.pos++]! & mask;
    if (v < mask) return v;
    let m = 0;
    let b: number;
    do {
      if (this.pos >= end) throw new HpackError('HPACK: integer truncated at the end of the block');
      b = buf[this.pos++]!;
      v += (b & 127) * 2 ** m;
      m += 7;
      if (v > 0x7fffffff || m > 35) throw new HpackError('HPACK: integer overflows 31 bits');
    } while (b & 128);
    return v;
  }
  /** A string literal (RFC 7541 5.2) at `pos`. */
  private string(buf: Buffer, end: number): string {
    if (this.pos >= end) throw new HpackError('HPACK: string literal missing at the end of the block');
    const huffman = buf[this.pos]! & 0x80;
    const len = this.integer(buf, end, 7);
    const s = this.pos;
    if (len > end - s) throw new HpackError(`HPACK: string of ${len} octets truncated at ${end - s}`);
    this.pos = s + len;
    return huffman ? huffmanDecode(buf, s, s + len) : buf.toString('latin1', s, s + len);
  }
}

/** Fields whose values change per request or response: indexing them would only churn the table. */
const NOT_INDEXED = new Set([
  ':path',
  'content-length',
  'content-range',
  'range',
  'etag',
  'if-none-match',
  'if-modified-since',
  'last-modified',
  'age',
]);
/** Fields always sent never-indexed (RFC 7541 7.1.3), whatever the caller marks. */
const SENSITIVE = new Set(['authorization', 'proxy-authorization']);

export interface HpackEncoderOptions {
  /** The dynamic table size to start with (the peer's SETTINGS_HEADER_TABLE_SIZE; default 4096). */
  maxTableSize?: number;
  /** Huffman-encode strings where that is not longer, as RFC 7541 Appendix C does (default true). */
  huffman?: boolean;
}

/** Encodes header blocks for one connection direction. */
export class HpackEncoder {
  private readonly table: DynamicTable;
  private readonly huffman: boolean;
  /** name -> value -> entry number; name -> newest entry number (entries of the dynamic table). */
  private readonly full = new Map<string, Map<string, number>>();
  private readonly names = new Map<string, number>();
  /** The smallest and the last table size set since the last block, or -1 if none (RFC 7541 4.2). */
  private minUpdate = -1;
  private lastUpdate = -1;
  private readonly onEvict = (n: number, name: string, value: string): void => {
    const byValue = this.full.get(name);
    if (byValue !== undefined && byValue.get(value) === n) {
      byValue.delete(value);
      if (byValue.size === 0) this.full.delete(name);
    }
    if (this.names.get(name) === n) this.names.delete(name);
  };

  constructor(opts: HpackEncoderOptions = {}) {
    this.table = new DynamicTable(opts.maxTableSize ?? 4096);
    this.huffman = opts.huffman ?? true;
  }

  /** A new table size (the peer's SETTINGS_HEADER_TABLE_SIZE); the next block starts with the update. */
  setMaxTableSize(n: number): void {
    this.minUpdate = this.minUpdate < 0 ? n : Math.min(this.minUpdate, n);
    this.lastUpdate = n;
    this.table.max = n;
    this.table.evictTo(n, this.onEvict);
  }

  /** The current dynamic table, newest first, as [name, value] pairs (for tests and diagnostics). */
  entries(): Array<[string, string]> {
    return this.table.entries();
  }

  /**
   * Encodes `fields` ([name, value, ...], names lower case) as one header block. `neverIndexed`: the
   * field numbers (i: fields[2i]) to send never-indexed, e.g. as an HpackDecoder reported them.
   */
  encode(fields: readonly string[], neverIndexed?: readonly number[]): Buffer {
    let bound = 12;
    for (let i = 0; i < fields.length; i++) bound += fields[i]!.length + 6;
    const out = Buffer.allocUnsafe(bound);
    let off = 0;
    if (this.minUpdate >= 0) {
      if (this.minUpdate !== this.lastUpdate) off = writeInt(out, off, this.minUpdate, 5, 0x20);
      off = writeInt(out, off, this.lastUpdate, 5, 0x20);
      this.minUpdate = this.lastUpdate = -1;
    }
    const t = this.table;
    let ni = 0;
    for (let f = 0; f < fields.length >> 1; f++) {
      const name = fields[2 * f]!;
      const value = fields[2 * f + 1]!;
      let never = SENSITIVE.has(name);
      if (neverIndexed !== undefined && ni < neverIndexed.length && neverIndexed[ni] === f) {
        never = true;
        ni++;
      }
      if (!never) {
        const s = STATIC_FULL.get(name)?.get(value);
        if (s !== undefined) {
          off = writeInt(out, off, s, 7, 0x80);
          continue;
        }
        const d = this.full.get(name)?.get(value);
        if (d !== undefined) {
          off = writeInt(out, off, STATIC_COUNT + t.next - d, 7, 0x80);
          continue;
        }
      }
      let nameIdx = STATIC_NAME.get(name) ?? 0;
      if (nameIdx === 0) {
        const d = this.names.get(name);
        if (d !== undefined) nameIdx = STATIC_COUNT + t.next - d;
      }
      const index = !never && !NOT_INDEXED.has(name) && entrySize(name, value) <= t.max >> 1;
      if (never) off = writeInt(out, off, nameIdx, 4, 0x10);
      else if (index) off = writeInt(out, off, nameIdx, 6, 0x40);
      else off = writeInt(out, off, nameIdx, 4, 0);
      if (nameIdx === 0) off = this.writeString(out, off, name);
      off = this.writeString(out, off, value);
      if (index) {
        const n = t.add(name, value, this.onEvict);
        if (n >= 0) {
          let byValue = this.full.get(name);
          if (byValue === undefined) this.full.set(name, (byValue = new Map()));
          byValue.set(value, n);
          this.names.set(name, n);
        }
      }
    }
    return out.subarray(0, off);
  }

  private writeString(out: Buffer, off: number, s: string): number {
    if (this.huffman && s.length > 0) {
      const hl = huffmanLength(s);
      if (hl <= s.length) {
        off = writeInt(out, off, hl, 7, 0x80);
        return huffmanEncodeInto(s, out, off);
      }
    }
    off = writeInt(out, off, s.length, 7, 0);
    return off + out.write(s, off, 'latin1');
  }
}

/** Writes integer `v` with an N-bit prefix (RFC 7541 5.1), the prefix's other bits `flags`. */
function writeInt(out: Buffer, off: number, v: number, prefix: number, flags: number): number {
  const max = (1 << prefix) - 1;
  if (v < max) {
    out[off++] = flags | v;
    return off;
  }
  out[off++] = flags | max;
  v -= max;
  while (v >= 128) {
    out[off++] = (v & 127) | 128;
    v = Math.floor(v / 128);
  }
  out[off++] = v;
  return off;
}
