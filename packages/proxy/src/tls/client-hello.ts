// Peeking at a TLS ClientHello: is this TLS at all, and which server name (SNI) does it ask for?
// Parses only as much of the record as it needs; never consumes the bytes (the caller gives them back).

export type ClientHelloResult = { kind: 'tls'; sni: string | undefined; alpn: string[] } | { kind: 'not-tls' } | 'more';

/** Decides from the bytes so far. A ClientHello may span several reads: 'more' asks for the rest. */
export function parseClientHello(buf: Buffer): ClientHelloResult {
  if (buf.length === 0) return 'more';
  // TLS record: type 22 (handshake), version 3.x, length.
  if (buf[0] !== 0x16) return { kind: 'not-tls' };
  if (buf.length < 5) return buf.length >= 2 && buf[1] !== 0x03 ? { kind: 'not-tls' } : 'more';
  if (buf[1] !== 0x03) return { kind: 'not-tls' };
  const recordLen = buf.readUInt16BE(3);
  if (recordLen > 16384 + 2048) return { kind: 'not-tls' };
  // Gather handshake bytes across records (a ClientHello is usually one record).
  const hs: Buffer[] = [];
  let off = 0;
  let have = 0;
  let need = -1;
  while (off + 5 <= buf.length) {
    if (buf[off] !== 0x16) return { kind: 'not-tls' };
    const len = buf.readUInt16BE(off + 3);
    if (off + 5 + len > buf.length) {
      hs.push(buf.subarray(off + 5));
      have += buf.length - off - 5;
      break;
    }
    hs.push(buf.subarray(off + 5, off + 5 + len));
    have += len;
    off += 5 + len;
    if (need === -1 && have >= 4) {
      const h = Buffer.concat(hs);
      if (h[0] !== 0x01) return { kind: 'not-tls' };
      need = 4 + h.readUIntBE(1, 3);
    }
    if (need !== -1 && have >= need) break;
  }
  const h = Buffer.concat(hs);
  if (h.length >= 1 && h[0] !== 0x01) return { kind: 'not-tls' };
  if (h.length < 4) return 'more';
  const total = 4 + h.readUIntBE(1, 3);
  if (h.length < total) return 'more';
  return parseHello(h.subarray(4, total));
}

function parseHello(b: Buffer): ClientHelloResult {
  try {
    let p = 2 + 32; // version, random
    const sidLen = b.readUInt8(p);
    p += 1 + sidLen;
    const csLen = b.readUInt16BE(p);
    p += 2 + csLen;
    const cmLen = b.readUInt8(p);
    p += 1 + cmLen;
    let sni: string | undefined;
    const alpn: string[] = [];
    if (p + 2 > b.length) return { kind: 'tls', sni, alpn };
    const extEnd = p + 2 + b.readUInt16BE(p);
    p += 2;
    while (p + 4 <= extEnd) {
      const type = b.readUInt16BE(p);
      const len = b.readUInt16BE(p + 2);
      const body = b.subarray(p + 4, p + 4 + len);
      p += 4 + len;
      if (type === 0) {
        // server_name: list length, then entries (type 0 = host_name, length, name)
        let q = 2;
        while (q + 3 <= body.length) {
          const nameType = body.readUInt8(q);
          const nameLen = body.readUInt16BE(q + 1);
          if (nameType === 0) sni = body.subarray(q + 3, q + 3 + nameLen).toString('ascii');
          q += 3 + nameLen;
        }
      } else if (type === 16) {
        let q = 2;
        while (q < body.length) {
          const l = body.readUInt8(q);
          alpn.push(body.subarray(q + 1, q + 1 + l).toString('ascii'));
          q += 1 + l;
        }
      }
    }
    return { kind: 'tls', sni, alpn };
  } catch {
    return { kind: 'not-tls' };
  }
}
