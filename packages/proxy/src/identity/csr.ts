// An ECDSA P-256 key made in memory and a DER PKCS#10 CSR naming only the local identity (CN and the one
// DNS SAN), signed with ECDSA-SHA256. Encoded by hand (the DER writer in @minimesh/proto) with node:crypto, on purpose: a library costs every
// proxy resident memory for these few bytes. @peculiar/x509 cost ~13 MB. Its ASN.1 layer alone
// (@peculiar/asn1-csr + asn1-x509 + asn1-schema + asn1-ecc, no WebCrypto) was measured too, with the whole
// proxy module graph loaded, node 20, medians of 7 runs: RSS 63.5 MB with this file against 69.7 MB with an
// asn1-csr version of it (+6.2 MB; heap +1.6 MB). Of that, asn1js (the BER codec underneath) is ~2 MB,
// asn1-schema ~1 MB, the asn1-x509/csr/ecc schema classes ~2.7 MB. That is over the ~2 MB budget, so
// this stays hand-written. The output is checked by an independent parser (@peculiar/x509, in the test)
// and accepted by the real identity service (netns test).
import { generateKeyPairSync, sign } from 'node:crypto';
import { der } from '@minimesh/proto';

const { tlv, seq, encodeOid: oid, bitString, octetString } = der;
const SET = 0x31;

export interface KeyAndCsr {
  keyPem: string;
  csrDer: Buffer;
}

export function createKeyAndCsr(identity: string): Promise<KeyAndCsr> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const subject = seq(tlv(SET, seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(identity, 'utf8')))));
  const san = seq(tlv(0x82, Buffer.from(identity, 'ascii'))); // GeneralNames { dNSName }
  const extensions = seq(seq(oid('2.5.29.17'), octetString(san)));
  const extensionRequest = seq(oid('1.2.840.113549.1.9.14'), tlv(SET, extensions));
  const info = seq(tlv(0x02, Buffer.from([0])), subject, spki, tlv(0xa0, extensionRequest));
  const signature = sign('sha256', info, privateKey); // DER-encoded ECDSA signature
  const csrDer = seq(info, seq(oid('1.2.840.10045.4.3.2')), bitString(signature));
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return Promise.resolve({ keyPem, csrDer });
}
