import { describe, expect, it } from 'vitest';
import { children, decodeOid, DerError, encodeOid, encodeTime, readOne, readTlv, seq, tlv } from './der.js';

describe('der', () => {
  it('writes and reads back nested TLVs, with long-form lengths', () => {
    const big = Buffer.alloc(300, 7);
    const s = seq(encodeOid('1.2.840.10045.4.3.2'), tlv(0x04, big));
    expect(s.subarray(0, 4)).toEqual(Buffer.from([0x30, 0x82, 0x01, 0x3a]));
    const [oid, octets] = children(readOne(s, 0x30).value);
    expect(decodeOid(oid!.value)).toBe('1.2.840.10045.4.3.2');
    expect(octets!.value).toEqual(big);
  });

  it('encodes UTCTime before 2050 and GeneralizedTime after', () => {
    expect(encodeTime(new Date('2026-11-21T23:55:59.900Z')).toString('latin1').slice(2)).toBe('261121235559Z');
    expect(encodeTime(new Date('2051-01-01T00:00:00Z')).toString('latin1').slice(2)).toBe('20510101000000Z');
  });

  it.each([
    [Buffer.from([0x30]), /truncated/],
    [Buffer.from([0x30, 0x80, 0x00, 0x00]), /indefinite length/],
    [Buffer.from([0x30, 0x81, 0x05, 1, 2, 3, 4, 5]), /not minimally encoded/],
    [Buffer.from([0x30, 0x03, 1, 2]), /truncated contents/],
  ])('refuses malformed DER %#', (buf, message) => {
    expect(() => readTlv(buf)).toThrow(DerError);
    expect(() => readTlv(buf)).toThrow(message);
  });
});
