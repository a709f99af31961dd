// The mesh's trust anchor and issuer, as the Linkerd tutorial makes them with `step certificate create`:
//   root:   ECDSA P-256, --profile root-ca         → CA, pathlen 1, keyCertSign+cRLSign, 10 years
//   issuer: ECDSA P-256, --profile intermediate-ca → CA, pathlen 0, signed by the root, --not-after 8760h
// Signed with @peculiar/x509 over WebCrypto (node-forge cannot sign with ECDSA keys).
// Private keys are written as PKCS#8 PEM ("BEGIN PRIVATE KEY"); Node, Go and OpenSSL all read it.
// @peculiar/x509 resolves its ASN.1 schemas through tsyringe, which needs the Reflect polyfill first.
import 'reflect-metadata';
import { createPrivateKey, createPublicKey, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';

type X509Crypto = Parameters<typeof x509.cryptoProvider.set>[0];
type KeyPair = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'];
type Key = KeyPair['privateKey'];

x509.cryptoProvider.set(webcrypto as unknown as X509Crypto);

const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGN = { name: 'ECDSA', hash: 'SHA-256' } as const;
const HOUR = 3_600_000;

export interface MeshCertsOptions {
  rootCommonName?: string;
  issuerCommonName?: string;
  /** Root validity in hours (step's root-ca default: 10 years). */
  rootLifetimeHours?: number;
  /** Issuer validity in hours (the Linkerd tutorial passes --not-after 8760h). */
  issuerLifetimeHours?: number;
  now?: Date;
}

export interface MeshCerts {
  caCrt: string;
  caKey: string;
  issuerCrt: string;
  issuerKey: string;
}

function serial(): string {
  const b = randomBytes(16);
  b[0] = (b[0] as number) & 0x7f; // positive
  return b.toString('hex');
}

async function pkcs8Pem(key: Key): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key as unknown as webcrypto.CryptoKey);
  return `${x509.PemConverter.encode(der, 'PRIVATE KEY')}\n`;
}

function caExtensions(pathLength: number): x509.Extension[] {
  return [
    new x509.BasicConstraintsExtension(true, pathLength, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
  ];
}

/** A certificate request that cannot be met (bad root, issuer outliving its root); the message says why. */
export class CertsError extends Error {
  readonly exitCode = 2;
}

function refuseOutliving(issuerNotAfter: Date, rootNotAfter: Date, root: string): void {
  if (issuerNotAfter.getTime() > rootNotAfter.getTime())
    throw new CertsError(
      `the issuer would expire ${issuerNotAfter.toISOString()}, after its trust anchor ${root} (${rootNotAfter.toISOString()}): an issuer may not outlive its root; shorten --issuer-lifetime or rotate the trust anchor first (docs/certificates.md)`,
    );
}

export async function createMeshCerts(opts: MeshCertsOptions = {}): Promise<MeshCerts> {
  const now = opts.now ?? new Date();
  refuseOutliving(
    new Date(now.getTime() + (opts.issuerLifetimeHours ?? 8760) * HOUR),
    new Date(now.getTime() + (opts.rootLifetimeHours ?? 87600) * HOUR),
    '(--root-lifetime)',
  );
  const rootKeys = (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as unknown as KeyPair;
  const issuerKeys = (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as unknown as KeyPair;
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${opts.rootCommonName ?? 'root.minimesh.cluster.local'}`,
    notBefore: now,
    notAfter: new Date(now.getTime() + (opts.rootLifetimeHours ?? 87600) * HOUR),
    signingAlgorithm: SIGN,
    keys: rootKeys,
    extensions: [...caExtensions(1), await x509.SubjectKeyIdentifierExtension.create(rootKeys.publicKey)],
  });
  const issuer = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${opts.issuerCommonName ?? 'identity.minimesh.cluster.local'}`,
    issuer: root.subject,
    notBefore: now,
    notAfter: new Date(now.getTime() + (opts.issuerLifetimeHours ?? 8760) * HOUR),
    signingAlgorithm: SIGN,
    publicKey: issuerKeys.publicKey,
    signingKey: rootKeys.privateKey,
    extensions: [
      ...caExtensions(0),
      await x509.SubjectKeyIdentifierExtension.create(issuerKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(rootKeys.publicKey),
    ],
  });
  return {
    caCrt: `${root.toString('pem')}\n`,
    caKey: await pkcs8Pem(rootKeys.privateKey),
    issuerCrt: `${issuer.toString('pem')}\n`,
    issuerKey: await pkcs8Pem(issuerKeys.privateKey),
  };
}

export interface IssuerOptions {
  /** The existing trust anchor, PEM. */
  caCrt: string;
  /** Its private key, PEM (PKCS#8 "PRIVATE KEY" or SEC1 "EC PRIVATE KEY", as step writes it). */
  caKey: string;
  issuerCommonName?: string;
  issuerLifetimeHours?: number;
  now?: Date;
}

/**
 * A new issuer signed by an existing trust anchor (issuer rotation: the proxies keep trusting the same
 * root). Refuses (CertsError) a root that is not a CA, a key that is not the root's, a root that has
 * expired, and an issuer that would outlive its root.
 */
export async function createIssuer(opts: IssuerOptions): Promise<{ issuerCrt: string; issuerKey: string }> {
  const now = opts.now ?? new Date();
  let rootX: X509Certificate;
  try {
    rootX = new X509Certificate(opts.caCrt);
  } catch (err) {
    throw new CertsError(`--ca: not a PEM certificate: ${(err as Error).message}`, { cause: err });
  }
  if (!rootX.ca) throw new CertsError(`--ca: ${rootX.subject.replace(/\n/g, ', ')} is not a CA certificate`);
  let keyObject;
  try {
    keyObject = createPrivateKey(opts.caKey);
  } catch (err) {
    throw new CertsError(`--ca-key: not a PEM private key: ${(err as Error).message}`, { cause: err });
  }
  const spki = (k: ReturnType<typeof createPublicKey>) => k.export({ type: 'spki', format: 'der' }).toString('hex');
  if (spki(createPublicKey(keyObject)) !== spki(rootX.publicKey))
    throw new CertsError(`--ca-key: the key does not belong to the certificate of --ca (${rootX.subject})`);
  if (keyObject.asymmetricKeyType !== 'ec' || keyObject.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw new CertsError(
      `--ca-key: a ${keyObject.asymmetricKeyType} key${keyObject.asymmetricKeyDetails?.namedCurve ? ` (${keyObject.asymmetricKeyDetails.namedCurve})` : ''}: expected ECDSA P-256, as certs create and step make it`,
    );
  const rootNotAfter = new Date(rootX.validTo);
  if (rootNotAfter.getTime() <= now.getTime())
    throw new CertsError(
      `--ca: the trust anchor expired ${rootNotAfter.toISOString()}: rotate it first (docs/certificates.md)`,
    );
  const notAfter = new Date(now.getTime() + (opts.issuerLifetimeHours ?? 8760) * HOUR);
  refuseOutliving(notAfter, rootNotAfter, `(${rootX.subject.replace(/\n/g, ', ')})`);

  const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'der' });
  const rootPrivate = (await webcrypto.subtle.importKey('pkcs8', pkcs8, EC, true, ['sign'])) as unknown as Key;
  const rootPublic = (await webcrypto.subtle.importKey(
    'spki',
    rootX.publicKey.export({ type: 'spki', format: 'der' }),
    EC,
    true,
    ['verify'],
  )) as unknown as Key;
  const root = new x509.X509Certificate(opts.caCrt);
  const rootSki = root.getExtension(x509.SubjectKeyIdentifierExtension);
  const issuerKeys = (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as unknown as KeyPair;
  const issuer = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${opts.issuerCommonName ?? 'identity.minimesh.cluster.local'}`,
    issuer: root.subject,
    notBefore: now,
    notAfter,
    signingAlgorithm: SIGN,
    publicKey: issuerKeys.publicKey,
    signingKey: rootPrivate,
    extensions: [
      ...caExtensions(0),
      await x509.SubjectKeyIdentifierExtension.create(issuerKeys.publicKey),
      // The root's own key id when it has one (whoever made it), so chain builders match them up.
      rootSki
        ? new x509.AuthorityKeyIdentifierExtension(rootSki.keyId)
        : await x509.AuthorityKeyIdentifierExtension.create(rootPublic),
    ],
  });
  return { issuerCrt: `${issuer.toString('pem')}\n`, issuerKey: await pkcs8Pem(issuerKeys.privateKey) };
}
