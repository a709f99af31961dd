// The Huffman code of HPACK (RFC 7541 Appendix B), for the HTTP/2 wire codec: a table-driven decoder
// (a nibble automaton built once at module load) and an encoder with the encoded length, so that an
// encoder can pick Huffman only when it is shorter. Strings are octets: one latin1 char per byte.

/** A header block that cannot be decoded (RFC 7541), or a malformed field in one (RFC 9113 8.2.1). */
export class HpackError extends Error {
  /** COMPRESSION_ERROR: the connection's decoding state is lost; PROTOCOL_ERROR: a malformed field only. */
  constructor(
    message: string,
    readonly code: 'COMPRESSION_ERROR' | 'PROTOCOL_ERROR' = 'COMPRESSION_ERROR',
  ) {
    super(message);
    this.name = 'HpackError';
  }
}

// Code lengths of symbols 0..255, then EOS (256). The code is canonical, so codes follow from lengths.
// prettier-ignore
const LEN = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
];

const CODE = new Float64Array(257);
{
  const order = [...Array(257).keys()].sort((a, b) => LEN[a]! - LEN[b]! || a - b);
  let code = 0;
  let prev = LEN[order[0]!]!;
  for (let i = 0; i < order.length; i++) {
    const s = order[i]!;
    if (i > 0) {
      code = (code + 1) * 2 ** (LEN[s]! - prev);
      prev = LEN[s]!;
    }
    CODE[s] = code;
  }
  // Spot checks against the RFC's "code as hex" column.
  const spot: Array<[number, number]> = [
    [0, 0x1ff8],
    [10, 0x3ffffffc],
    [32, 0x14],
    [48, 0x0],
    [97, 0x3],
    [127, 0xffffffc],
    [255, 0x3ffffee],
    [256, 0x3fffffff],
  ];
  for (const [s, c] of spot) if (CODE[s] !== c) throw new Error(`HPACK Huffman table: code of ${s} is wrong`);
}

// Decoding automaton: a state is an internal node of the code tree (256 of them). Each (state, nibble)
// entry packs the next state (bits 0-7), an emitted symbol (8-15), EMIT (16) and FAIL (17: EOS decoded).
const EMIT = 1 << 16;
const FAIL = 1 << 17;
const TABLE = new Int32Array(256 * 16);
/** 1 where ending in that state is valid padding: at most 7 bits, all ones (a prefix of EOS). */
const ACCEPT = new Uint8Array(256);
{
  const kids: Array<[number, number]> = [[-1, -1]]; // >= 0: internal node; < 0: leaf -(symbol + 1)
  const depth = [0];
  const ones = [true];
  for (let s = 0; s < 257; s++) {
    let n = 0;
    for (let b = LEN[s]! - 1; b >= 0; b--) {
      const bit = Math.floor(CODE[s]! / 2 ** b) & 1;
      const node = kids[n]!;
      if (b === 0) {
        node[bit] = -(s + 1);
        break;
      }
      if (node[bit] === -1) {
        kids.push([-1, -1]);
        depth.push(depth[n]! + 1);
        ones.push(ones[n]! && bit === 1);
        node[bit] = kids.length - 1;
      }
      n = node[bit]!;
    }
  }
  for (let st = 0; st < 256; st++) {
    ACCEPT[st] = st === 0 || (ones[st]! && depth[st]! <= 7) ? 1 : 0;
    for (let nib = 0; nib < 16; nib++) {
      let n = st;
      let e = 0;
      for (let b = 3; b >= 0; b--) {
        const c = kids[n]![(nib >> b) & 1]!;
        if (c >= 0) {
          n = c;
          continue;
        }
        n = 0;
        if (c === -257) {
          e |= FAIL;
          break;
        }
        e |= EMIT | ((-c - 1) << 8);
      }
      TABLE[st * 16 + nib] = e | n;
    }
  }
}

let scratch = Buffer.allocUnsafe(4096);

/** Decodes the Huffman string in `buf[start, end)`. */
export function huffmanDecode(buf: Uint8Array, start: number, end: number): string {
  const need = (((end - start) * 8) / 5) | 0;
  if (scratch.length < need) scratch = Buffer.allocUnsafe(need * 2);
  const out = scratch;
  let st = 0;
  let n = 0;
  for (let i = start; i < end; i++) {
    const b = buf[i]!;
    let e = TABLE[(st << 4) | (b >> 4)]!;
    if (e & EMIT) out[n++] = (e >> 8) & 255;
    st = e & 255;
    const f = TABLE[(st << 4) | (b & 15)]!;
    if (f & EMIT) out[n++] = (f >> 8) & 255;
    st = f & 255;
    e |= f;
    if (e & FAIL) throw new HpackError('HPACK: EOS in a Huffman string');
  }
  if (!ACCEPT[st]) throw new HpackError('HPACK: Huffman padding longer than 7 bits or not all ones');
  return out.toString('latin1', 0, n);
}

/** The length in octets of `s` Huffman-encoded. */
export function huffmanLength(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) bits += LEN[s.charCodeAt(i) & 255]!;
  return (bits + 7) >> 3;
}

const POW2: number[] = [];
for (let i = 0; i < 40; i++) POW2.push(2 ** i);

/** Writes `s` Huffman-encoded into `out` at `off`; returns the offset after it. */
export function huffmanEncodeInto(s: string, out: Uint8Array, off: number): number {
  let acc = 0; // never more than 37 bits: fits a double exactly
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) & 255;
    const len = LEN[c]!;
    acc = acc * POW2[len]! + CODE[c]!;
    bits += len;
    while (bits >= 8) {
      bits -= 8;
      const byte = (acc / POW2[bits]!) & 255;
      out[off++] = byte;
      acc -= byte * POW2[bits]!;
    }
  }
  if (bits > 0) out[off++] = (acc * POW2[8 - bits]! + (POW2[8 - bits]! - 1)) & 255;
  return off;
}

/** `s` Huffman-encoded. */
export function huffmanEncode(s: string): Buffer {
  const out = Buffer.allocUnsafe(huffmanLength(s));
  huffmanEncodeInto(s, out, 0);
  return out;
}
