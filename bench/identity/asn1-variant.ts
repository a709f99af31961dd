// For comparison only (bench/identity, not the service): the Certify path with the ASN.1 written by
// @peculiar/asn1-csr / asn1-x509 / asn1-schema / asn1-ecc instead of src/ca/der.ts, keeping node:crypto
// for key import, verification and signing. This is the variant that was tried in packages/identity and
// measured (docs/identity.md, "Signing"); it stays here so the figure can be re-measured.
import { createPublicKey, randomBytes, sign, verify } from 'node:crypto';
import { fromBER } from 'asn1js';
import { AsnConvert, AsnParser, OctetString } from '@peculiar/asn1-schema';
import { CertificationRequest } from '@peculiar/asn1-csr';
import { ECParameters, id_ecdsaWithSHA256, id_ecPublicKey, id_secp256r1 } from '@peculiar/asn1-ecc';
import {
  AlgorithmIdentifier,
  AttributeTypeAndValue,
  AttributeValue,
  AuthorityKeyIdentifier,
  BasicConstraints,
  Certificate,
  ExtendedKeyUsage,
  Extension,
  Extensions,
  GeneralName,
  id_ce_authorityKeyIdentifier,
  id_ce_basicConstraints,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_subjectAltName,
  id_kp_clientAuth,
  id_kp_serverAuth,
  KeyIdentifier,
  KeyUsage,
  KeyUsageFlags,
  Name,
  RelativeDistinguishedName,
  SubjectAlternativeName,
  TBSCertificate,
  Time,
  Validity,
  Version,
} from '@peculiar/asn1-x509';
import type { Issuer } from '@minimesh/identity';

const ab = (b: Buffer): ArrayBuffer => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
const ext = (extnID: string, critical: boolean, value: unknown): Extension =>
  new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });
const EXT_BC = ext(id_ce_basicConstraints, true, new BasicConstraints({ cA: false }));
const EXT_KU = ext(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.digitalSignature));
const EXT_EKU = ext(id_ce_extKeyUsage, false, new ExtendedKeyUsage([id_kp_serverAuth, id_kp_clientAuth]));

/** Returns a function doing CSR parse + the checks + verify + leaf build + sign, as Certify does, for one P-256 issuer. */
export function asn1Certify(issuer: Issuer): (csrDer: Buffer, identity: string) => Buffer {
  const issuerName = AsnConvert.parse(issuer.subjectName, Name);
  const sigAlg = AsnConvert.parse(issuer.signatureAlgorithm, AlgorithmIdentifier);
  return (csrDer, identity) => {
    const ber = fromBER(csrDer);
    if (ber.offset !== csrDer.length) throw new Error('CSR: not DER or trailing bytes');
    const req = AsnParser.fromASN(ber.result, CertificationRequest);
    const info = req.certificationRequestInfo;
    const spki = info.subjectPKInfo;
    const params = spki.algorithm.parameters;
    if (
      spki.algorithm.algorithm !== id_ecPublicKey ||
      !params ||
      AsnConvert.parse(params, ECParameters).namedCurve !== id_secp256r1
    )
      throw new Error('CSR: not P-256');
    if (req.signatureAlgorithm.algorithm !== id_ecdsaWithSHA256) throw new Error('CSR: not ECDSA-SHA256');
    const point = Buffer.from(spki.subjectPublicKey);
    const key = createPublicKey({
      key: {
        kty: 'EC',
        crv: 'P-256',
        x: point.subarray(1, 33).toString('base64url'),
        y: point.subarray(33, 65).toString('base64url'),
      },
      format: 'jwk',
    });
    if (!verify('sha256', Buffer.from(req.certificationRequestInfoRaw as ArrayBuffer), key, Buffer.from(req.signature)))
      throw new Error('CSR: signature');
    const sans: string[] = [];
    for (const attr of info.attributes ?? []) {
      for (const v of attr.values) {
        for (const e of AsnConvert.parse(v, Extensions)) {
          if (e.extnID === id_ce_subjectAltName)
            for (const gn of AsnConvert.parse(e.extnValue, SubjectAlternativeName)) sans.push(gn.dNSName ?? 'non-dns');
        }
      }
    }
    if (sans.length !== 1 || sans[0] !== identity) throw new Error('CSR: SAN');
    for (const rdn of info.subject)
      for (const atv of rdn)
        if (atv.type === '2.5.4.3' && atv.value.toString() !== identity) throw new Error('CSR: CN');

    const now = Date.now();
    const serial = randomBytes(16);
    serial[0] = ((serial[0] as number) & 0x7f) | 0x40;
    const extensions = new Extensions([
      EXT_BC,
      EXT_KU,
      EXT_EKU,
      ext(id_ce_subjectAltName, false, new SubjectAlternativeName([new GeneralName({ dNSName: identity })])),
    ]);
    if (issuer.subjectKeyId)
      extensions.push(
        ext(
          id_ce_authorityKeyIdentifier,
          false,
          new AuthorityKeyIdentifier({ keyIdentifier: new KeyIdentifier(ab(issuer.subjectKeyId)) }),
        ),
      );
    const tbsCertificate = new TBSCertificate({
      version: Version.v3,
      serialNumber: ab(serial),
      signature: sigAlg,
      issuer: issuerName,
      validity: new Validity(),
      subject: new Name([
        new RelativeDistinguishedName([
          new AttributeTypeAndValue({ type: '2.5.4.3', value: new AttributeValue({ utf8String: identity }) }),
        ]),
      ]),
      subjectPublicKeyInfo: spki,
      extensions,
    });
    tbsCertificate.validity.notBefore = new Time({ utcTime: new Date(Math.floor((now - 20_000) / 1000) * 1000) });
    tbsCertificate.validity.notAfter = new Time({ utcTime: new Date(Math.floor((now + 86_420_000) / 1000) * 1000) });
    const signature = sign(issuer.signatureHash, Buffer.from(AsnConvert.serialize(tbsCertificate)), issuer.privateKey);
    return Buffer.from(
      AsnConvert.serialize(
        new Certificate({ tbsCertificate, signatureAlgorithm: sigAlg, signatureValue: ab(signature) }),
      ),
    );
  };
}
