// Peeking at a TLS ClientHello: is this TLS at all, and which server name (SNI) does it ask for?
// Parses only as much of the record as it needs; never consumes the bytes (the caller gives them back).

export type ClientHelloResult = { kind: 'tls'; sni: string | undefined; alpn: string[] } | { kind: 'not-tls' } | 'more';

/** A handshake message longer than this is not a ClientHello anyone sends (linkerd2-proxy: at most 0xffff). */
const MAX_HELLO = 0xffff;

/**
 * Decides from the bytes so far. A ClientHello may span several reads, and several TLS records (a
 * client may fragment it): 'more' asks for the rest. Anything that is not a well-formed ClientHello —
 * another record type, a record version other than 3.1–3.3, a handshake message other than
 * ClientHello, lengths that overrun their container — is 'not-tls'. A server name that is not a DNS
 * name (an IP address, bytes outside [a-z0-9-_.], an empty label) counts as no SNI, as linkerd2-proxy
 * reads it (linkerd/tls/src/server/client_hello.rs parses it as a DNS name or drops it).
 */
export function parseClientHello(buf: Buffer): ClientHelloResult {
  // Gather the handshake bytes of consecutive handshake records (a ClientHello is usually one record).
  const hs: Buffer[] = [];
  let have = 0;
  let need = -1;
  let off = 0;
  for (;;) {
    if (off >= buf.length) break;
    if (buf[off] !== 0x16) return NOT_TLS;
    if (off + 1 < buf.length && buf[off + 1] !== 0x03) return NOT_TLS;
    if (off + 2 < buf.length && (buf[off + 2]! < 0x01 || buf[off + 2]! > 0x03)) return NOT_TLS;
    if (off + 5 > buf.length) break;
    const len = buf.readUInt16BE(off + 3);
    if (len === 0 || len > 16384 + 2048) return NOT_TLS;
    const body = buf.subarray(off + 5, Math.min(buf.length, off + 5 + len));
    hs.push(body);
    have += body.length;
    off += 5 + len;
    if (need === -1 && have >= 4) {
      const h = hs.length === 1 ? hs[0]! : Buffer.concat(hs);
      if (h[0] !== 0x01) return NOT_TLS;
      const n = h.readUIntBE(1, 3);
      if (n > MAX_HELLO) return NOT_TLS;
      need = 4 + n;
    }
    if (need !== -1 && have >= need) break;
  }
  if (hs.length > 0 && hs[0]!.length > 0 && hs[0]![0] !== 0x01) return NOT_TLS;
  if (need === -1 || have < need) return 'more';
  const h = hs.length === 1 ? hs[0]! : Buffer.concat(hs);
  try {
    return parseHello(h.subarray(4, need));
  } catch {
    return NOT_TLS;
  }
}

const NOT_TLS: ClientHelloResult = Object.freeze({ kind: 'not-tls' as const });

/** Bounds-checked reads: any overrun throws (the caller answers not-tls). */
class Reader {
  constructor(
    private readonly b: Buffer,
    public p = 0,
    readonly end = b.length,
  ) {}
  get done(): boolean {
    return this.p >= this.end;
  }
  u8(): number {
    if (this.p + 1 > this.end) throw new RangeError('overrun');
    return this.b[this.p++]!;
  }
  u16(): number {
    if (this.p + 2 > this.end) throw new RangeError('overrun');
    const v = this.b.readUInt16BE(this.p);
    this.p += 2;
    return v;
  }
  bytes(n: number): Buffer {
    if (this.p + n > this.end) throw new RangeError('overrun');
    const v = this.b.subarray(this.p, this.p + n);
    this.p += n;
    return v;
  }
  /** A vector with a 1- or 2-byte length, as a Reader of its own. */
  vec(lenBytes: 1 | 2): Reader {
    const n = lenBytes === 1 ? this.u8() : this.u16();
    const start = this.p;
    this.bytes(n);
    return new Reader(this.b, start, start + n);
  }
}

/** A DNS name as SNI carries it (RFC 6066: a host name, not an IP address); else undefined. */
function dnsName(raw: Buffer): string | undefined {
  const name = raw.toString('latin1');
  if (name.length === 0 || name.length > 253) return undefined;
  const labels = (name.endsWith('.') ? name.slice(0, -1) : name).split('.');
  for (const l of labels) if (l.length === 0 || l.length > 63 || !/^[A-Za-z0-9_-]+$/.test(l)) return undefined;
  if (labels.every((l) => /^[0-9]+$/.test(l))) return undefined; // a dotted IPv4 address
  return name;
}

function parseHello(b: Buffer): ClientHelloResult {
  const r = new Reader(b);
  const major = r.u8();
  r.u8(); // minor
  if (major !== 0x03) return NOT_TLS;
  r.bytes(32); // random
  r.vec(1); // session id
  r.vec(2); // cipher suites
  r.vec(1); // compression methods
  let sni: string | undefined;
  const alpn: string[] = [];
  if (r.done) return { kind: 'tls', sni, alpn };
  const exts = r.vec(2);
  let sawSni = false;
  while (!exts.done) {
    const type = exts.u16();
    const body = exts.vec(2);
    if (type === 0 && !sawSni) {
      sawSni = true;
      // server_name_list: entries of (type, vector<u16> name); the first host_name (type 0) counts.
      const list = body.vec(2);
      while (!list.done) {
        const nameType = list.u8();
        const name = list.vec(2);
        if (nameType === 0 && sni === undefined) sni = dnsName(name.bytes(name.end - name.p)) ?? '';
      }
      if (sni === '') sni = undefined;
    } else if (type === 16) {
      const list = body.vec(2);
      while (!list.done) {
        const p = list.vec(1);
        alpn.push(p.bytes(p.end - p.p).toString('latin1'));
      }
    }
  }
  return { kind: 'tls', sni, alpn };
}
