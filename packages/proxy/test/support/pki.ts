// A throwaway mesh PKI for tests and benchmarks: ECDSA P-256 trust anchor → issuer → leaves.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface TestPki {
  anchorPem: string;
  /** The issuer certificate and its PKCS#8 key, as the identity service's --issuer-dir expects. */
  issuerPem: string;
  issuerKeyPem: string;
  issuer: { cert: x509.X509Certificate; keys: webcrypto.CryptoKeyPair };
  /** Signs a CSR (DER) for `identity`, valid for lifetimeMs. Returns leaf DER + issuer DER. */
  sign(
    csrDer: Buffer,
    identity: string,
    lifetimeMs: number,
  ): Promise<{ leaf: Buffer; chain: Buffer[]; notAfter: Date }>;
  /** A leaf (PEM chain + key PEM) for any name, for fake servers. */
  leaf(identity: string, lifetimeMs?: number): Promise<{ certPem: string; keyPem: string }>;
  /** A new issuer from the same root, same name, new key (as `certs create --ca`); signs from now on. */
  rotateIssuer(): Promise<void>;
}

async function keys(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
}

function serial(): string {
  return Buffer.from(webcrypto.getRandomValues(new Uint8Array(12)))
    .toString('hex')
    .replace(/^[89a-f]/, '1');
}

export async function createTestPki(trustDomain = 'cluster.local'): Promise<TestPki> {
  const rootKeys = await keys();
  const now = Date.now();
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=root.${trustDomain}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 365 * 86400_000),
    keys: rootKeys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  let issuerKeys = await keys();
  const makeIssuer = (k: webcrypto.CryptoKeyPair) =>
    x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=identity.minimesh.${trustDomain}`,
      issuer: root.subject,
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 365 * 86400_000),
      publicKey: k.publicKey,
      signingKey: rootKeys.privateKey,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      ],
    });
  let issuer = await makeIssuer(issuerKeys);
  async function issue(publicKey: x509.PublicKey | webcrypto.CryptoKey, identity: string, lifetimeMs: number) {
    const t = Date.now();
    const notAfter = new Date(t + lifetimeMs);
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${identity}`,
      issuer: issuer.subject,
      notBefore: new Date(t - 20_000),
      notAfter,
      publicKey,
      signingKey: issuerKeys.privateKey,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: identity }]),
      ],
    });
    return { cert, notAfter };
  }
  const issuerPkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', issuerKeys.privateKey));
  return {
    anchorPem: root.toString('pem') + '\n',
    issuerPem: issuer.toString('pem') + '\n',
    issuerKeyPem: `-----BEGIN PRIVATE KEY-----\n${issuerPkcs8.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`,
    issuer: { cert: issuer, keys: issuerKeys },
    async sign(csrDer, identity, lifetimeMs) {
      const csr = new x509.Pkcs10CertificateRequest(csrDer);
      if (!(await csr.verify())) throw new Error('CSR signature invalid');
      const { cert, notAfter } = await issue(csr.publicKey, identity, lifetimeMs);
      return { leaf: Buffer.from(cert.rawData), chain: [Buffer.from(issuer.rawData)], notAfter };
    },
    async leaf(identity, lifetimeMs = 86400_000) {
      const k = await keys();
      const { cert } = await issue(k.publicKey, identity, lifetimeMs);
      const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', k.privateKey));
      const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
      return { certPem: cert.toString('pem') + '\n' + issuer.toString('pem') + '\n', keyPem };
    },
    async rotateIssuer() {
      issuerKeys = await keys();
      issuer = await makeIssuer(issuerKeys);
    },
  };
}
