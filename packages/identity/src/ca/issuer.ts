// The issuer: the intermediate CA that signs leaves. Loading checks that it is a CA, that it chains to
// the trust anchors, that its key matches its certificate and that it is currently valid; every
// refusal names the file and the problem.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { IdentityError } from '../errors.js';
import { der } from '@minimesh/proto';

const { children, decodeOid, encodeOid, readOne, seq } = der;
type Tlv = der.Tlv;

/** How the issuer's files are named in --issuer-dir. */
export const ISSUER_SCHEMES = {
  /** minimesh's own Secret (the chart renders it from identity.issuer.tls.crtPEM / keyPEM). */
  'minimesh.io/tls': { cert: 'crt.pem', key: 'key.pem' },
  /** A kubernetes.io/tls Secret, as cert-manager writes it. */
  'kubernetes.io/tls': { cert: 'tls.crt', key: 'tls.key' },
} as const;

export type IssuerScheme = keyof typeof ISSUER_SCHEMES;

export function isIssuerScheme(value: string): value is IssuerScheme {
  return Object.hasOwn(ISSUER_SCHEMES, value);
}

export function issuerFiles(dir: string, scheme: IssuerScheme): { certFile: string; keyFile: string } {
  const names = ISSUER_SCHEMES[scheme];
  return { certFile: join(dir, names.cert), keyFile: join(dir, names.key) };
}

export interface Issuer {
  /** The issuer certificate (first in the cert file). */
  certificate: X509Certificate;
  /** DER of the issuer and of any further intermediates in the cert file: the chain sent with each leaf. */
  chain: Buffer[];
  /** The issuer's subject Name, DER, exactly as in its certificate (becomes each leaf's issuer). */
  subjectName: Buffer;
  /** The issuer's subjectKeyIdentifier, if it has one (becomes each leaf's authorityKeyIdentifier). */
  subjectKeyId: Buffer | undefined;
  privateKey: KeyObject;
  /** "ECDSA P-256", "ECDSA P-384" or "RSA". */
  keyAlgorithm: string;
  /** Hash and AlgorithmIdentifier (DER) used for the leaf signature. */
  signatureHash: 'sha256' | 'sha384';
  signatureAlgorithm: Buffer;
  notBefore: Date;
  /** The earliest NotAfter in the issuer's chain: no leaf outlives it. */
  notAfter: Date;
  /** sha256 fingerprint of the issuer certificate, for logs. */
  fingerprint: string;
}

export interface ParseIssuerOptions {
  certPem: string;
  keyPem: string;
  /** Trust anchors (parseTrustAnchors). */
  anchors: X509Certificate[];
  /** File names, used only in messages. */
  certFile: string;
  keyFile: string;
  now?: Date;
}

const OID = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  subjectKeyIdentifier: '2.5.29.14',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  ecdsaWithSha384: '1.2.840.10045.4.3.3',
  sha256WithRsa: '1.2.840.113549.1.1.11',
};

function invalid(file: string, problem: string, cause?: unknown): IdentityError {
  return new IdentityError(
    'MINIMESH_IDENTITY_ISSUER_INVALID',
    `${file}: ${problem}`,
    cause === undefined ? undefined : { cause },
  );
}

/** Splits a PEM bundle into certificates; names the file when a block does not parse. */
export function parseCertificates(pem: string, file: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw invalid(file, `certificate #${i + 1} does not parse (${(err as Error).message})`, err);
    }
  });
}

export function parseTrustAnchors(pem: string, file: string): X509Certificate[] {
  let anchors: X509Certificate[];
  try {
    anchors = parseCertificates(pem, file);
  } catch (err) {
    throw new IdentityError('MINIMESH_IDENTITY_TRUST_ANCHORS_INVALID', (err as Error).message, { cause: err });
  }
  if (anchors.length === 0)
    throw new IdentityError('MINIMESH_IDENTITY_TRUST_ANCHORS_INVALID', `${file}: holds no PEM certificate`);
  return anchors;
}

export async function readTrustAnchors(file: string): Promise<X509Certificate[]> {
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (err) {
    throw new IdentityError(
      'MINIMESH_IDENTITY_TRUST_ANCHORS_INVALID',
      `${file}: cannot read the trust anchors (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      { cause: err },
    );
  }
  return parseTrustAnchors(pem, file);
}

interface CertFields {
  subjectName: Buffer;
  notBefore: Date;
  notAfter: Date;
  extensions: Map<string, Buffer>;
}

function parseTime(t: Tlv): Date {
  const s = t.value.toString('ascii');
  const full = t.tag === 0x17 ? `${Number(s.slice(0, 2)) >= 50 ? '19' : '20'}${s}` : s;
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(full);
  if (!m) throw new Error(`unsupported time ${s}`);
  return new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
}

/** The few TBSCertificate fields the CA needs, read from the DER. */
function readCertFields(der: Buffer): CertFields {
  const [tbs] = children(readOne(der, 0x30).value);
  if (!tbs) throw new Error('no TBSCertificate');
  const f = children(tbs.value);
  const base = f[0]?.tag === 0xa0 ? 1 : 0;
  const validity = f[base + 3];
  const subject = f[base + 4];
  if (!validity || !subject) throw new Error('TBSCertificate is incomplete');
  const [nb, na] = children(validity.value);
  if (!nb || !na) throw new Error('validity is incomplete');
  const extensions = new Map<string, Buffer>();
  const extWrapper = f.find((t) => t.tag === 0xa3);
  if (extWrapper) {
    const [list] = children(extWrapper.value);
    for (const ext of list ? children(list.value) : []) {
      const parts = children(ext.value);
      const id = parts[0];
      const value = parts[parts.length - 1];
      if (id && value) extensions.set(decodeOid(id.value), value.value);
    }
  }
  return { subjectName: subject.raw, notBefore: parseTime(nb), notAfter: parseTime(na), extensions };
}

function isCa(fields: CertFields): { ok: true } | { ok: false; why: string } {
  const bc = fields.extensions.get(OID.basicConstraints);
  if (!bc) return { ok: false, why: 'has no basicConstraints extension' };
  const [cA] = children(readOne(bc, 0x30).value);
  if (!cA || cA.tag !== 0x01 || cA.value[0] === 0) return { ok: false, why: 'basicConstraints says CA:FALSE' };
  const ku = fields.extensions.get(OID.keyUsage);
  if (ku) {
    const bits = readOne(ku, 0x03).value;
    if (((bits[1] ?? 0) & 0x04) === 0) return { ok: false, why: 'keyUsage lacks keyCertSign' };
  }
  return { ok: true };
}

function describeSubject(cert: X509Certificate): string {
  return cert.subject.replace(/\n/g, ', ');
}

/** Validates and assembles an issuer from PEM text. Throws MINIMESH_IDENTITY_ISSUER_INVALID naming the file. */
export function parseIssuer(opts: ParseIssuerOptions): Issuer {
  const { certFile, keyFile } = opts;
  const now = opts.now ?? new Date();
  const certs = parseCertificates(opts.certPem, certFile);
  const certificate = certs[0];
  if (!certificate) throw invalid(certFile, 'holds no PEM certificate');
  let fields: CertFields;
  try {
    fields = readCertFields(certificate.raw);
  } catch (err) {
    throw invalid(certFile, `certificate fields do not parse (${(err as Error).message})`, err);
  }
  const ca = isCa(fields);
  if (!ca.ok) throw invalid(certFile, `issuer "${describeSubject(certificate)}" is not a CA: ${ca.why}`);

  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(opts.keyPem);
  } catch (err) {
    throw invalid(keyFile, `cannot read the private key (${(err as Error).message.split('\n')[0]})`, err);
  }
  if (!certificate.checkPrivateKey(privateKey))
    throw invalid(keyFile, `private key does not match the issuer certificate in ${certFile}`);

  let keyAlgorithm: string;
  let signatureHash: Issuer['signatureHash'];
  let signatureAlgorithm: Buffer;
  const curve = privateKey.asymmetricKeyDetails?.namedCurve;
  if (privateKey.asymmetricKeyType === 'ec' && curve === 'prime256v1') {
    [keyAlgorithm, signatureHash, signatureAlgorithm] = ['ECDSA P-256', 'sha256', seq(encodeOid(OID.ecdsaWithSha256))];
  } else if (privateKey.asymmetricKeyType === 'ec' && curve === 'secp384r1') {
    [keyAlgorithm, signatureHash, signatureAlgorithm] = ['ECDSA P-384', 'sha384', seq(encodeOid(OID.ecdsaWithSha384))];
  } else if (privateKey.asymmetricKeyType === 'rsa') {
    [keyAlgorithm, signatureHash, signatureAlgorithm] = [
      'RSA',
      'sha256',
      seq(encodeOid(OID.sha256WithRsa), Buffer.from([0x05, 0x00])),
    ];
  } else {
    throw invalid(
      keyFile,
      `key type ${privateKey.asymmetricKeyType ?? 'unknown'}${curve ? ` (${curve})` : ''} is not supported: expected ECDSA P-256, ECDSA P-384 or RSA`,
    );
  }

  // Chain: issuer → (intermediates from the cert file) → one of the anchors.
  const rest = certs.slice(1);
  let current = certificate;
  let anchor: X509Certificate | undefined;
  for (let depth = 0; depth <= rest.length && !anchor; depth++) {
    anchor = opts.anchors.find((a) => current.checkIssued(a) && current.verify(a.publicKey));
    if (anchor) break;
    const next = rest.find((c) => c !== current && current.checkIssued(c) && current.verify(c.publicKey));
    if (!next) break;
    current = next;
  }
  if (!anchor) {
    throw invalid(
      certFile,
      `issuer "${describeSubject(certificate)}" does not chain to the trust anchors (${opts.anchors.map(describeSubject).join('; ')})`,
    );
  }

  // Leaves carry the issuer and the intermediates, never a self-signed root.
  const chainCerts = certs.filter((c) => !(c.checkIssued(c) && c.verify(c.publicKey)) || c === certificate);
  // No leaf outlives any certificate between it and the anchor, the anchor included.
  let notAfter = fields.notAfter;
  for (const c of [...chainCerts.slice(1), anchor]) {
    const na = readCertFields(c.raw).notAfter;
    if (na < notAfter) notAfter = na;
  }
  if (now < fields.notBefore) throw invalid(certFile, `issuer is not valid before ${fields.notBefore.toISOString()}`);
  if (now > fields.notAfter) throw invalid(certFile, `issuer expired at ${fields.notAfter.toISOString()}`);
  if (now > notAfter)
    throw invalid(
      certFile,
      `a certificate between the issuer and the trust anchor (or the anchor) expired at ${notAfter.toISOString()}`,
    );

  return {
    certificate,
    chain: chainCerts.map((c) => c.raw),
    subjectName: fields.subjectName,
    subjectKeyId: (() => {
      const ski = fields.extensions.get(OID.subjectKeyIdentifier);
      return ski ? readOne(ski, 0x04).value : undefined;
    })(),
    privateKey,
    keyAlgorithm,
    signatureHash,
    signatureAlgorithm,
    notBefore: fields.notBefore,
    notAfter,
    fingerprint: certificate.fingerprint256,
  };
}

/** Reads and validates the issuer in `dir` under `scheme`. */
export async function loadIssuer(opts: {
  dir: string;
  scheme: IssuerScheme;
  anchors: X509Certificate[];
  now?: Date;
}): Promise<Issuer> {
  const { certFile, keyFile } = issuerFiles(opts.dir, opts.scheme);
  const read = async (file: string, what: string): Promise<string> => {
    try {
      return await readFile(file, 'utf8');
    } catch (err) {
      throw invalid(
        file,
        `cannot read the ${what} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        err,
      );
    }
  };
  // One after the other, so that when both are missing the error names the certificate every time
  // (with Promise.all the first rejection to arrive won, and it varied from run to run).
  const certPem = await read(certFile, 'issuer certificate');
  const keyPem = await read(keyFile, 'issuer key');
  return parseIssuer({
    certPem,
    keyPem,
    anchors: opts.anchors,
    certFile,
    keyFile,
    ...(opts.now ? { now: opts.now } : {}),
  });
}
