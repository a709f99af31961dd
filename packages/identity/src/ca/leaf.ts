// Leaf certificates: a fixed X.509 v3 template filled in per request and signed with the issuer key
// by Node's crypto (OpenSSL). See docs/identity.md for why this is not a generic certificate builder.
import { randomBytes, sign } from 'node:crypto';
import { IdentityError } from '../errors.js';
import { der } from '@minimesh/proto';
import type { Issuer } from './issuer.js';

const { bitString, encodeOid, encodeTime, octetString, seq, tlv } = der;

/** What signing a leaf needs of the issuer (a worker thread gets only this: ./signing-pool.ts). */
export type LeafIssuer = Pick<
  Issuer,
  'privateKey' | 'signatureHash' | 'signatureAlgorithm' | 'subjectName' | 'subjectKeyId' | 'notAfter' | 'fingerprint'
>;

export interface LeafOptions {
  issuer: LeafIssuer;
  /** The leaf's identity: its only DNS SAN (and its CN when it fits in 64 characters). */
  identity: string;
  /** The CSR's SubjectPublicKeyInfo, DER. */
  publicKeyInfo: Buffer;
  /** Milliseconds. */
  lifetime: number;
  /** Milliseconds, subtracted from NotBefore and added to NotAfter. */
  clockSkew: number;
  now?: Date;
  /** For tests: a fixed serial (positive, DER INTEGER contents). */
  serial?: Buffer;
}

export interface Leaf {
  der: Buffer;
  notBefore: Date;
  notAfter: Date;
  serial: Buffer;
}

// Constant pieces of every leaf.
const VERSION_3 = tlv(0xa0, tlv(0x02, Buffer.from([2])));
const EXT_BASIC_CONSTRAINTS = seq(encodeOid('2.5.29.19'), tlv(0x01, Buffer.from([0xff])), octetString(seq()));
const EXT_KEY_USAGE = seq(
  encodeOid('2.5.29.15'),
  tlv(0x01, Buffer.from([0xff])),
  octetString(tlv(0x03, Buffer.from([0x07, 0x80]))),
);
const EXT_EXT_KEY_USAGE = seq(
  encodeOid('2.5.29.37'),
  octetString(seq(encodeOid('1.3.6.1.5.5.7.3.1'), encodeOid('1.3.6.1.5.5.7.3.2'))),
);
const OID_SAN = encodeOid('2.5.29.17');
const OID_AKI = encodeOid('2.5.29.35');
const OID_CN = encodeOid('2.5.4.3');
const CRITICAL = tlv(0x01, Buffer.from([0xff]));

/** 16 random bytes as a positive, minimally encoded INTEGER (RFC 5280 allows up to 20 octets). */
export function randomSerial(): Buffer {
  const b = randomBytes(16);
  b[0] = ((b[0] as number) & 0x7f) | 0x40;
  return b;
}

/** NotBefore = now − skew; NotAfter = min(now + lifetime + skew, issuer NotAfter); whole seconds. */
export function leafValidity(opts: { now: Date; lifetime: number; clockSkew: number; issuerNotAfter: Date }): {
  notBefore: Date;
  notAfter: Date;
} {
  const floor = (ms: number): Date => new Date(Math.floor(ms / 1000) * 1000);
  const notBefore = floor(opts.now.getTime() - opts.clockSkew);
  const wanted = floor(opts.now.getTime() + opts.lifetime + opts.clockSkew);
  const cap = floor(opts.issuerNotAfter.getTime());
  return { notBefore, notAfter: wanted < cap ? wanted : cap };
}

/** Builds and signs a leaf. Throws MINIMESH_IDENTITY_SIGN_FAILED if the key refuses to sign. */
export function buildLeaf(opts: LeafOptions): Leaf {
  const { issuer, identity } = opts;
  const { notBefore, notAfter } = leafValidity({
    now: opts.now ?? new Date(),
    lifetime: opts.lifetime,
    clockSkew: opts.clockSkew,
    issuerNotAfter: issuer.notAfter,
  });
  const serial = opts.serial ?? randomSerial();
  const name = Buffer.from(identity, 'utf8');
  // RFC 5280: CN is at most 64 characters; with an empty subject the SAN must be critical.
  const withCn = identity.length <= 64;
  const subject = withCn ? seq(tlv(0x31, seq(OID_CN, tlv(0x0c, name)))) : seq();
  const san = withCn
    ? seq(OID_SAN, octetString(seq(tlv(0x82, name))))
    : seq(OID_SAN, CRITICAL, octetString(seq(tlv(0x82, name))));
  const extensions = [EXT_BASIC_CONSTRAINTS, EXT_KEY_USAGE, EXT_EXT_KEY_USAGE, san];
  if (issuer.subjectKeyId) extensions.push(seq(OID_AKI, octetString(seq(tlv(0x80, issuer.subjectKeyId)))));
  const tbs = seq(
    VERSION_3,
    tlv(0x02, serial),
    issuer.signatureAlgorithm,
    issuer.subjectName,
    seq(encodeTime(notBefore), encodeTime(notAfter)),
    subject,
    opts.publicKeyInfo,
    tlv(0xa3, seq(...extensions)),
  );
  let signature: Buffer;
  try {
    signature = sign(issuer.signatureHash, tbs, issuer.privateKey);
  } catch (err) {
    throw new IdentityError(
      'MINIMESH_IDENTITY_SIGN_FAILED',
      `signing the leaf for ${identity} with issuer ${issuer.fingerprint} failed`,
      { cause: err },
    );
  }
  return { der: seq(tbs, issuer.signatureAlgorithm, bitString(signature)), notBefore, notAfter, serial };
}
