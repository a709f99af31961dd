// An ECDSA P-256 key made in memory and a DER PKCS#10 CSR naming only the local identity (CN and the one
// DNS SAN), signed with ECDSA-SHA256. Encoded by hand with node:crypto, on purpose: a library costs every
// proxy resident memory for these few bytes. @peculiar/x509 cost ~13 MB. Its ASN.1 layer alone
// (@peculiar/asn1-csr + asn1-x509 + asn1-schema + asn1-ecc, no WebCrypto) was measured too, with the whole
// proxy module graph loaded, node 20, medians of 7 runs: RSS 63.5 MB with this file against 69.7 MB with an
// asn1-csr version of it (+6.2 MB; heap +1.6 MB). Of that, asn1js (the BER codec underneath) is ~2 MB,
// asn1-schema ~1 MB, the asn1-x509/csr/ecc schema classes ~2.7 MB. That is over the ~2 MB budget, so
// this stays hand-written. The output is checked by an independent parser (@peculiar/x509, in the test)
// and accepted by the real identity service (netns test).
import { generateKeyPairSync, sign } from 'node:crypto';

export interface KeyAndCsr {
  keyPem: string;
  csrDer: Buffer;
}

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One DER TLV. */
export function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
}

export function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [40 * (parts[0] as number) + (parts[1] as number)];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = p >>> 7; v > 0; v >>>= 7) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return der(0x06, Buffer.from(out));
}

const SEQ = 0x30;
const SET = 0x31;

export function createKeyAndCsr(identity: string): Promise<KeyAndCsr> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const subject = der(SEQ, der(SET, der(SEQ, oid('2.5.4.3'), der(0x0c, Buffer.from(identity, 'utf8')))));
  const san = der(SEQ, der(0x82, Buffer.from(identity, 'ascii'))); // GeneralNames { dNSName }
  const extensions = der(SEQ, der(SEQ, oid('2.5.29.17'), der(0x04, san)));
  const extensionRequest = der(SEQ, oid('1.2.840.113549.1.9.14'), der(SET, extensions));
  const info = der(SEQ, der(0x02, Buffer.from([0])), subject, spki, der(0xa0, extensionRequest));
  const signature = sign('sha256', info, privateKey); // DER-encoded ECDSA signature
  const csrDer = der(SEQ, info, der(SEQ, oid('1.2.840.10045.4.3.2')), der(0x03, Buffer.from([0]), signature));
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return Promise.resolve({ keyPem, csrDer });
}
