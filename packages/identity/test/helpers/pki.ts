// Test PKI, made at test time the Linkerd tutorial's way (`step certificate create --profile root-ca` / `intermediate-ca`:
// ECDSA P-256, root with pathlen 1, intermediate with pathlen 0), plus CSRs of every shape Certify must judge.
// Nothing here is committed key material.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPrivateKey, webcrypto } from 'node:crypto';
import { mkdir, rename, rm, symlink, writeFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { parseIssuer, parseTrustAnchors, type Issuer } from '../../src/ca/issuer.js';

x509.cryptoProvider.set(webcrypto as never);

type CryptoKeyPair = webcrypto.CryptoKeyPair;
type Algorithm = webcrypto.Algorithm;
type EcKeyGenParams = webcrypto.EcKeyGenParams;
type RsaHashedKeyGenParams = webcrypto.RsaHashedKeyGenParams;

export type KeyKind = 'P-256' | 'P-384' | 'RSA';

const ALGS: Record<KeyKind, RsaHashedKeyGenParams | EcKeyGenParams> = {
  'P-256': { name: 'ECDSA', namedCurve: 'P-256' },
  'P-384': { name: 'ECDSA', namedCurve: 'P-384' },
  RSA: {
    name: 'RSASSA-PKCS1-v1_5',
    modulusLength: 2048,
    publicExponent: new Uint8Array([1, 0, 1]),
    hash: 'SHA-256',
  } as RsaHashedKeyGenParams,
};

function signingAlg(kind: KeyKind): Algorithm & { hash?: string } {
  return kind === 'RSA'
    ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
    : { name: 'ECDSA', hash: kind === 'P-384' ? 'SHA-384' : 'SHA-256' };
}

export async function generateKeys(kind: KeyKind = 'P-256'): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALGS[kind] as EcKeyGenParams, true, ['sign', 'verify'])) as CryptoKeyPair;
}

/** The private key as PEM: SEC1 "EC PRIVATE KEY" (as step writes it) or PKCS#1 for RSA, or PKCS#8 on request. */
export async function privateKeyPem(
  keys: CryptoKeyPair,
  format: 'traditional' | 'pkcs8' = 'traditional',
): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  if (format === 'pkcs8') return key.export({ type: 'pkcs8', format: 'pem' }) as string;
  return key.export({ type: key.asymmetricKeyType === 'ec' ? 'sec1' : 'pkcs1', format: 'pem' }) as string;
}

export interface Ca {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
  kind: KeyKind;
  certPem: string;
}

export interface CaOptions {
  name?: string;
  kind?: KeyKind;
  /** basicConstraints CA flag (default true). */
  ca?: boolean;
  pathLength?: number;
  /** Include keyCertSign in keyUsage (default true). */
  certSign?: boolean;
  notBefore?: Date;
  notAfter?: Date;
}

const HOUR = 3600_000;
/** Whole seconds: a certificate's times have no milliseconds, so a Date with them would not round-trip. */
const wholeSeconds = (ms: number): Date => new Date(Math.floor(ms / 1000) * 1000);

async function makeCa(parent: Ca | undefined, opts: CaOptions): Promise<Ca> {
  const kind = opts.kind ?? 'P-256';
  const keys = await generateKeys(kind);
  const name = `CN=${opts.name ?? (parent ? 'identity.minimesh.cluster.local' : 'root.minimesh.cluster.local')}`;
  const usages =
    (opts.certSign ?? true)
      ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign
      : x509.KeyUsageFlags.digitalSignature;
  const extensions: x509.Extension[] = [
    new x509.KeyUsagesExtension(usages, true),
    new x509.BasicConstraintsExtension(opts.ca ?? true, (opts.ca ?? true) ? opts.pathLength : undefined, true),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (parent) extensions.push(await x509.AuthorityKeyIdentifierExtension.create(parent.keys.publicKey));
  const common = {
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(8)))
      .toString('hex')
      .replace(/^[89a-f]/, '1'),
    notBefore: opts.notBefore ?? wholeSeconds(Date.now() - HOUR),
    notAfter: opts.notAfter ?? wholeSeconds(Date.now() + 8760 * HOUR),
    extensions,
  };
  const cert = parent
    ? await x509.X509CertificateGenerator.create({
        ...common,
        subject: name,
        issuer: parent.cert.subject,
        publicKey: keys.publicKey,
        signingKey: parent.keys.privateKey,
        signingAlgorithm: signingAlg(parent.kind),
      })
    : await x509.X509CertificateGenerator.createSelfSigned({
        ...common,
        name,
        keys,
        signingAlgorithm: signingAlg(kind),
      });
  return { cert, keys, kind, certPem: cert.toString('pem') };
}

/** `step certificate create root.minimesh.cluster.local ca.crt ca.key --profile root-ca`: P-256, pathlen 1. */
export function createRootCa(opts: CaOptions = {}): Promise<Ca> {
  return makeCa(undefined, { pathLength: 1, ...opts });
}

/** `step certificate create identity.minimesh.cluster.local issuer.crt issuer.key --profile intermediate-ca --ca ca.crt --ca-key ca.key`. */
export function createIntermediateCa(parent: Ca, opts: CaOptions = {}): Promise<Ca> {
  return makeCa(parent, { pathLength: 0, ...opts });
}

/** A self-signed, non-CA certificate (for "issuer is not a CA"). */
export function createNonCaIssuer(parent: Ca): Promise<Ca> {
  return makeCa(parent, { ca: false, certSign: false, name: 'not-a-ca.minimesh.cluster.local' });
}

export interface CsrOptions {
  kind?: KeyKind;
  /** Subject CN; omitted by default. */
  cn?: string;
  dns?: string[];
  ips?: string[];
  uris?: string[];
  emails?: string[];
  keys?: CryptoKeyPair;
}

/** A DER PKCS#10 CSR. The proxy writes its own; this one can also be wrong on purpose. */
export async function createCsr(opts: CsrOptions = {}): Promise<{ der: Buffer; keys: CryptoKeyPair }> {
  const kind = opts.kind ?? 'P-256';
  const keys = opts.keys ?? (await generateKeys(kind));
  const names: x509.JsonGeneralName[] = [
    ...(opts.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(opts.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
    ...(opts.uris ?? []).map((value) => ({ type: 'url' as const, value })),
    ...(opts.emails ?? []).map((value) => ({ type: 'email' as const, value })),
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    ...(opts.cn !== undefined ? { name: opts.cn === '' ? '' : `CN=${opts.cn}` } : {}),
    keys,
    signingAlgorithm: signingAlg(kind),
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : [],
  });
  return { der: Buffer.from(csr.rawData), keys };
}

/**
 * Writes the issuer files as a Kubernetes Secret volume does: a timestamped directory, a `..data`
 * symlink to it, and one symlink per key through `..data`. Calling it again swaps `..data` atomically.
 */
/** `ca` as identity's issuer, trusted by `root` (as the issuer watcher would load it from its files). */
export async function issuerOf(ca: Ca, root: Ca): Promise<Issuer> {
  return parseIssuer({
    certPem: ca.certPem,
    keyPem: await privateKeyPem(ca.keys),
    anchors: parseTrustAnchors(root.certPem, 'ca.crt'),
    certFile: 'crt.pem',
    keyFile: 'key.pem',
  });
}

export async function writeSecretVolume(dir: string, files: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true });
  const stamp = `..${new Date().toISOString().replace(/[-:.]/g, '_')}_${Math.random().toString(36).slice(2, 8)}`;
  await mkdir(join(dir, stamp));
  for (const [name, content] of Object.entries(files))
    await writeFile(join(dir, stamp, name), content, { mode: 0o600 });
  let old: string | undefined;
  try {
    old = await readlink(join(dir, '..data'));
  } catch {
    old = undefined;
  }
  await symlink(stamp, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const name of Object.keys(files)) {
    try {
      await symlink(join('..data', name), join(dir, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  if (old) await rm(join(dir, old), { recursive: true, force: true });
}

export { x509 };
export type { CryptoKeyPair };
