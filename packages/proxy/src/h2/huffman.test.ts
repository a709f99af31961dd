// The HPACK Huffman code: round trips of every octet and of random strings, the RFC's examples, and
// the strings a decoder must refuse (EOS inside, padding too long or not all ones).
import { describe, expect, it } from 'vitest';
import { HpackError, huffmanDecode, huffmanEncode, huffmanLength } from './huffman.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s/g, ''), 'hex');
const decode = (b: Buffer): string => huffmanDecode(b, 0, b.length);

/** A small seeded generator, so a failure can be reproduced. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s / 0x80000000;
  };
}

describe('Huffman', () => {
  it('encodes the RFC 7541 C.4 and C.6 strings as the RFC does', () => {
    expect(huffmanEncode('www.example.com').toString('hex')).toBe('f1e3c2e5f23a6ba0ab90f4ff');
    expect(huffmanEncode('no-cache').toString('hex')).toBe('a8eb10649cbf');
    expect(huffmanEncode('custom-value').toString('hex')).toBe('25a849e95bb8e8b4bf');
    expect(huffmanEncode('Mon, 21 Oct 2013 20:13:21 GMT').toString('hex')).toBe(
      'd07abe941054d444a8200595040b8166e082a62d1bff',
    );
    expect(decode(hex('aec3771a4b'))).toBe('private');
  });

  it('round-trips every octet value, alone and all together', () => {
    let all = '';
    for (let c = 0; c < 256; c++) {
      const s = String.fromCharCode(c);
      all += s;
      const enc = huffmanEncode(s);
      expect(enc.length).toBe(huffmanLength(s));
      expect(decode(enc)).toBe(s);
    }
    expect(decode(huffmanEncode(all))).toBe(all);
    expect(decode(huffmanEncode(all.split('').reverse().join('')))).toBe(all.split('').reverse().join(''));
  });

  it('round-trips random strings of every length up to 300', () => {
    const rnd = random(7);
    for (let len = 0; len <= 300; len++) {
      const codes: number[] = [];
      for (let i = 0; i < len; i++) codes.push(rnd() < 0.7 ? 32 + Math.floor(rnd() * 95) : Math.floor(rnd() * 256));
      const s = String.fromCharCode(...codes);
      const enc = huffmanEncode(s);
      expect(enc.length).toBe(huffmanLength(s));
      expect(decode(enc)).toBe(s);
    }
  });

  it('decodes a string inside a larger buffer', () => {
    const b = Buffer.concat([hex('ffff'), huffmanEncode('hello'), hex('00')]);
    expect(huffmanDecode(b, 2, b.length - 1)).toBe('hello');
  });

  it('refuses EOS in a string', () => {
    expect(() => decode(hex('ffffffff'))).toThrow(/EOS/);
    expect(() => decode(Buffer.concat([huffmanEncode('ab'), hex('ffffffff')]))).toThrow(HpackError);
  });

  it('refuses padding longer than 7 bits or not all ones', () => {
    expect(decode(hex('07'))).toBe('0'); // '0' is 00000, then 111
    expect(() => decode(hex('00'))).toThrow(/padding/); // '0' then 000
    expect(() => decode(hex('ff'))).toThrow(/padding/); // 8 bits of ones
    expect(() => decode(Buffer.concat([huffmanEncode('a'), hex('ff')]))).toThrow(/padding/);
    expect(decode(Buffer.alloc(0))).toBe('');
  });
});
