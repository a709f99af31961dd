// A minimal DER reader and writer for the bytes the identity API carries (Certify's PKCS#10 CSR and
// X.509 certificates are DER): just enough ASN.1 to walk a CSR and to assemble a leaf certificate
// from a fixed template. One copy for identity and the proxy. Reading returns slices of the input (no copies, no re-encoding),
// so a signature is always checked over the exact bytes that were signed.

export interface Tlv {
  /** The identifier octet (single-byte tags only; X.509 never needs more). */
  tag: number;
  /** The contents. */
  value: Buffer;
  /** Tag, length and contents. */
  raw: Buffer;
}

export class DerError extends Error {
  override name = 'DerError';
}

/** Reads one TLV at `offset`; throws DerError on anything that is not well-formed DER. */
export function readTlv(buf: Buffer, offset = 0): Tlv {
  if (offset + 2 > buf.length) throw new DerError('truncated: no room for tag and length');
  const tag = buf[offset] as number;
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tags are not supported');
  let len = buf[offset + 1] as number;
  let head = 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 3) throw new DerError(n === 0 ? 'indefinite length is not DER' : 'length too large');
    if (offset + 2 + n > buf.length) throw new DerError('truncated length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + (buf[offset + 2 + i] as number);
    if (len < 0x80 || (n > 1 && buf[offset + 2] === 0)) throw new DerError('length not minimally encoded');
    head += n;
  }
  const end = offset + head + len;
  if (end > buf.length) throw new DerError('truncated contents');
  return { tag, value: buf.subarray(offset + head, end), raw: buf.subarray(offset, end) };
}

/** Reads a whole buffer that must hold exactly one TLV. */
export function readOne(buf: Buffer, expectTag?: number): Tlv {
  const t = readTlv(buf, 0);
  if (t.raw.length !== buf.length) throw new DerError('trailing bytes after the value');
  if (expectTag !== undefined && t.tag !== expectTag)
    throw new DerError(`expected tag 0x${expectTag.toString(16)}, got 0x${t.tag.toString(16)}`);
  return t;
}

/** The children of a constructed value. */
export function children(value: Buffer): Tlv[] {
  const out: Tlv[] = [];
  for (let off = 0; off < value.length;) {
    const t = readTlv(value, off);
    out.push(t);
    off += t.raw.length;
  }
  return out;
}

/** Dotted form of an OBJECT IDENTIFIER's contents. */
export function decodeOid(value: Buffer): string {
  if (value.length === 0) throw new DerError('empty OBJECT IDENTIFIER');
  const parts: number[] = [];
  let acc = 0;
  for (let i = 0; i < value.length; i++) {
    const b = value[i] as number;
    acc = acc * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      if (parts.length === 0) {
        const first = acc < 80 ? Math.floor(acc / 40) : 2;
        parts.push(first, acc - first * 40);
      } else parts.push(acc);
      acc = 0;
    } else if (i === value.length - 1) throw new DerError('truncated OBJECT IDENTIFIER');
  }
  return parts.join('.');
}

// ---- writing ----

function encodeLength(len: number): Buffer {
  if (len < 0x80) return Buffer.from([len]);
  if (len < 0x100) return Buffer.from([0x81, len]);
  if (len < 0x10000) return Buffer.from([0x82, len >> 8, len & 0xff]);
  return Buffer.from([0x83, (len >> 16) & 0xff, (len >> 8) & 0xff, len & 0xff]);
}

export function tlv(tag: number, ...parts: Buffer[]): Buffer {
  const body = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag]), encodeLength(body.length), body]);
}

export const seq = (...parts: Buffer[]): Buffer => tlv(0x30, ...parts);

export function encodeOid(dotted: string): Buffer {
  const nums = dotted.split('.').map(Number);
  const [a = 0, b = 0, ...rest] = nums;
  const bytes: number[] = [];
  for (const n of [a * 40 + b, ...rest]) {
    const chunk: number[] = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5), whole seconds, UTC. */
export function encodeTime(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-11-21T23:55:59.000Z
  const year = date.getUTCFullYear();
  const digits = iso.slice(0, 19).replace(/[-:T]/g, ''); // 20261121235559
  if (year >= 1950 && year < 2050) return tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii'));
  return tlv(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

/** A BIT STRING with no unused bits. */
export const bitString = (bytes: Buffer): Buffer => tlv(0x03, Buffer.from([0]), bytes);
export const octetString = (bytes: Buffer): Buffer => tlv(0x04, bytes);
