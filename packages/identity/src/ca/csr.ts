// PKCS#10 CSR parsing (untrusted input) and the identity checks Certify makes on it.
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { IdentityError } from '../errors.js';
import { der } from '@minimesh/proto';

const { children, decodeOid, DerError, readOne } = der;
type Tlv = der.Tlv;

const OID = {
  commonName: '2.5.4.3',
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
  ecPublicKey: '1.2.840.10045.2.1',
  prime256v1: '1.2.840.10045.3.1.7',
  rsaEncryption: '1.2.840.113549.1.1.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  ecdsaWithSha384: '1.2.840.10045.4.3.3',
  ecdsaWithSha512: '1.2.840.10045.4.3.4',
} as const;

const CURVE_NAMES: Record<string, string> = {
  '1.2.840.10045.3.1.7': 'P-256',
  '1.3.132.0.34': 'P-384',
  '1.3.132.0.35': 'P-521',
};

const ECDSA_HASHES: Record<string, string> = {
  [OID.ecdsaWithSha256]: 'sha256',
  [OID.ecdsaWithSha384]: 'sha384',
  [OID.ecdsaWithSha512]: 'sha512',
};

/** SAN kinds by GeneralName tag (RFC 5280 §4.2.1.6). */
const SAN_KINDS: Record<number, string> = {
  0xa0: 'otherName',
  0x81: 'email',
  0x82: 'dns',
  0xa3: 'x400Address',
  0xa4: 'directoryName',
  0xa5: 'ediPartyName',
  0x86: 'uri',
  0x87: 'ip',
  0x88: 'registeredID',
};

export interface ParsedCsr {
  /** The subject CommonName, if the subject has one. */
  commonName: string | undefined;
  /** Every SAN, in order: kind ('dns', 'ip', 'uri', 'email', ...) and its text (hex for binary kinds). */
  sans: { kind: string; value: string }[];
  /** "ECDSA P-256", "ECDSA P-384", "RSA", or the algorithm OID when unknown. */
  keyAlgorithm: string;
  /** The SubjectPublicKeyInfo, exactly as in the CSR (DER). */
  publicKeyInfo: Buffer;
  /** The signed part (CertificationRequestInfo) and the signature over it. */
  signedBytes: Buffer;
  signatureAlgorithm: string;
  signature: Buffer;
}

function fail(problem: string, cause?: unknown): never {
  throw new IdentityError(
    'MINIMESH_IDENTITY_CSR_INVALID',
    `CSR: ${problem}`,
    cause === undefined ? undefined : { cause },
  );
}

function at<T>(list: T[], i: number, what: string): T {
  const v = list[i];
  if (v === undefined) throw new DerError(`missing ${what}`);
  return v;
}

function expectTag(t: Tlv, tag: number, what: string): Tlv {
  if (t.tag !== tag) throw new DerError(`${what}: expected tag 0x${tag.toString(16)}, got 0x${t.tag.toString(16)}`);
  return t;
}

function readSans(extnValue: Buffer): ParsedCsr['sans'] {
  const names = readOne(extnValue, 0x30);
  return children(names.value).map((gn) => {
    const kind = SAN_KINDS[gn.tag] ?? `tag-0x${gn.tag.toString(16)}`;
    const text =
      kind === 'dns' || kind === 'uri' || kind === 'email' ? gn.value.toString('latin1') : gn.value.toString('hex');
    return { kind, value: text };
  });
}

/** Parses a DER PKCS#10 CSR. Throws IdentityError MINIMESH_IDENTITY_CSR_INVALID when it is not one. */
export function parseCsr(der: Buffer): ParsedCsr {
  try {
    const top = children(readOne(der, 0x30).value);
    const info = expectTag(at(top, 0, 'certificationRequestInfo'), 0x30, 'certificationRequestInfo');
    const sigAlg = children(expectTag(at(top, 1, 'signatureAlgorithm'), 0x30, 'signatureAlgorithm').value);
    const sigBits = expectTag(at(top, 2, 'signature'), 0x03, 'signature').value;
    if (top.length !== 3) throw new DerError('CertificationRequest must have exactly three parts');
    if (sigBits[0] !== 0) throw new DerError('signature BIT STRING has unused bits');

    const parts = children(info.value);
    const version = expectTag(at(parts, 0, 'version'), 0x02, 'version');
    if (version.value.length !== 1 || version.value[0] !== 0) throw new DerError('version must be 0 (v1)');
    const subject = expectTag(at(parts, 1, 'subject'), 0x30, 'subject');
    const spki = expectTag(at(parts, 2, 'subjectPKInfo'), 0x30, 'subjectPKInfo');
    const attributes = parts[3];
    if (attributes !== undefined) expectTag(attributes, 0xa0, 'attributes');
    if (parts.length > 4) throw new DerError('unexpected fields after attributes');

    let commonName: string | undefined;
    for (const rdn of children(subject.value)) {
      for (const atv of children(expectTag(rdn, 0x31, 'RelativeDistinguishedName').value)) {
        const [type, value] = children(expectTag(atv, 0x30, 'AttributeTypeAndValue').value);
        if (type && value && decodeOid(expectTag(type, 0x06, 'attribute type').value) === OID.commonName) {
          if (commonName !== undefined) throw new DerError('subject has more than one CommonName');
          // BMPString is big-endian UCS-2; everything else a CN may be is ASCII-compatible.
          commonName =
            value.tag === 0x1e && value.value.length % 2 === 0
              ? Buffer.from(value.value).swap16().toString('utf16le')
              : value.value.toString('utf8');
        }
      }
    }

    const [keyAlg, keyBits] = children(spki.value);
    if (!keyAlg || !keyBits) throw new DerError('subjectPKInfo is incomplete');
    const [algOid, algParam] = children(expectTag(keyAlg, 0x30, 'key algorithm').value);
    if (!algOid) throw new DerError('key algorithm OID missing');
    const keyOid = decodeOid(expectTag(algOid, 0x06, 'key algorithm OID').value);
    let keyAlgorithm = keyOid;
    if (keyOid === OID.ecPublicKey) {
      const curveOid = algParam && algParam.tag === 0x06 ? decodeOid(algParam.value) : 'explicit or missing parameters';
      keyAlgorithm = `ECDSA ${CURVE_NAMES[curveOid] ?? curveOid}`;
    } else if (keyOid === OID.rsaEncryption) keyAlgorithm = 'RSA';

    const sans: ParsedCsr['sans'] = [];
    let sawSanExtension = false;
    for (const attr of attributes ? children(attributes.value) : []) {
      const [type, values] = children(expectTag(attr, 0x30, 'attribute').value);
      if (!type || !values) throw new DerError('attribute is incomplete');
      if (decodeOid(expectTag(type, 0x06, 'attribute type').value) !== OID.extensionRequest) continue;
      for (const exts of children(expectTag(values, 0x31, 'attribute values').value)) {
        for (const ext of children(expectTag(exts, 0x30, 'extensions').value)) {
          const fields = children(expectTag(ext, 0x30, 'extension').value);
          const id = decodeOid(expectTag(at(fields, 0, 'extension id'), 0x06, 'extension id').value);
          const extnValue = expectTag(at(fields, fields.length - 1, 'extension value'), 0x04, 'extension value').value;
          if (id !== OID.subjectAltName) continue;
          if (sawSanExtension) throw new DerError('more than one subjectAltName extension');
          sawSanExtension = true;
          sans.push(...readSans(extnValue));
        }
      }
    }
    const signatureAlgorithm = decodeOid(
      expectTag(at(sigAlg, 0, 'signature algorithm OID'), 0x06, 'signature algorithm OID').value,
    );
    return {
      commonName,
      sans,
      keyAlgorithm,
      publicKeyInfo: spki.raw,
      signedBytes: info.raw,
      signatureAlgorithm,
      signature: sigBits.subarray(1),
    };
  } catch (err) {
    if (err instanceof DerError) fail(`not a DER-encoded PKCS#10 certificate request (${err.message})`, err);
    throw err;
  }
}

/**
 * Imports a P-256 SubjectPublicKeyInfo. An uncompressed point goes in as a JWK, which OpenSSL 3 imports in
 * about half the time of the DER decoder (measured by bench/identity: ~55 µs against ~105 µs, the biggest
 * single cost of a Certify); anything else takes the DER path.
 */
function importP256(spki: Buffer): KeyObject {
  const bits = readOne(spki, 0x30).value;
  const point = spki.subarray(spki.length - 65);
  if (spki.length === 91 && bits.length === 89 && spki[spki.length - 66] === 0 && point[0] === 0x04) {
    const x = point.subarray(1, 33).toString('base64url');
    const y = point.subarray(33, 65).toString('base64url');
    return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x, y }, format: 'jwk' });
  }
  return createPublicKey({ key: spki, format: 'der', type: 'spki' });
}

export interface ValidCsr {
  /** The CSR's public key (ECDSA P-256) as SubjectPublicKeyInfo DER, ready to put into the leaf. */
  publicKeyInfo: Buffer;
  publicKey: KeyObject;
}

/**
 * The CSR checks Certify makes, in order: parses; key is ECDSA P-256; signature verifies (proof of
 * possession); exactly one SAN, a DNS name equal to `identity`; no IP, URI or email SANs; CN empty or equal.
 * Throws IdentityError MINIMESH_IDENTITY_CSR_INVALID with the first problem found.
 */
export function validateCsr(der: Buffer, identity: string): ValidCsr {
  const csr = parseCsr(der);
  if (csr.keyAlgorithm !== 'ECDSA P-256') fail(`key is ${csr.keyAlgorithm}, expected ECDSA P-256`);
  const hash = ECDSA_HASHES[csr.signatureAlgorithm];
  if (!hash) fail(`signature algorithm ${csr.signatureAlgorithm} is not ECDSA with SHA-256/384/512`);
  let publicKey: KeyObject;
  try {
    publicKey = importP256(csr.publicKeyInfo);
  } catch (err) {
    fail('public key does not decode as an ECDSA P-256 point', err);
  }
  let ok = false;
  try {
    ok = verify(hash, csr.signedBytes, publicKey, csr.signature);
  } catch (err) {
    fail('signature is malformed', err);
  }
  if (!ok) fail('signature does not verify with its own public key');
  const forbidden = csr.sans.filter((s) => s.kind !== 'dns');
  if (forbidden.length > 0)
    fail(`has ${forbidden.map((s) => `${s.kind} SAN "${s.value}"`).join(', ')}; only one DNS SAN is allowed`);
  if (csr.sans.length !== 1)
    fail(
      `has ${csr.sans.length} DNS SANs (${csr.sans.map((s) => s.value).join(', ') || 'none'}), expected exactly one: ${identity}`,
    );
  const dns = (csr.sans[0] as { value: string }).value;
  if (dns !== identity) fail(`DNS SAN "${dns}" does not match the requested identity "${identity}"`);
  if (csr.commonName !== undefined && csr.commonName !== '' && csr.commonName !== identity) {
    fail(`CommonName "${csr.commonName}" does not match the requested identity "${identity}"`);
  }
  return { publicKeyInfo: csr.publicKeyInfo, publicKey };
}
