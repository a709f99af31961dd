// The mesh's trust anchor and issuer, as the seed makes them with `step certificate create`:
//   root:   ECDSA P-256, --profile root-ca         → CA, pathlen 1, keyCertSign+cRLSign, 10 years
//   issuer: ECDSA P-256, --profile intermediate-ca → CA, pathlen 0, signed by the root, --not-after 8760h
// Signed with @peculiar/x509 over WebCrypto (node-forge cannot sign with ECDSA keys).
// Private keys are written as PKCS#8 PEM ("BEGIN PRIVATE KEY"); Node, Go and OpenSSL all read it.
// @peculiar/x509 resolves its ASN.1 schemas through tsyringe, which needs the Reflect polyfill first.
import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
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
  /** Issuer validity in hours (the seed passes --not-after 8760h). */
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

export async function createMeshCerts(opts: MeshCertsOptions = {}): Promise<MeshCerts> {
  const now = opts.now ?? new Date();
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
