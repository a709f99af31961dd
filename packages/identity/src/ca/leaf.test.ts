import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCsr, createIntermediateCa, createRootCa, issuerOf, x509, type Ca } from '../../test/helpers/pki.js';
import { validateCsr } from './csr.js';
import type { Issuer } from './issuer.js';
import { buildLeaf, leafValidity } from './leaf.js';

const ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
const HOUR = 3600_000;
const LIFETIME = 24 * HOUR;
const SKEW = 20_000;

let root: Ca;
let issuerCa: Ca;
let issuer: Issuer;
let spki: Buffer;

function issuerFrom(ca: Ca): Promise<Issuer> {
  return issuerOf(ca, root);
}

beforeAll(async () => {
  root = await createRootCa();
  issuerCa = await createIntermediateCa(root);
  issuer = await issuerFrom(issuerCa);
  spki = validateCsr((await createCsr({ dns: [ID] })).der, ID).publicKeyInfo;
});

describe('buildLeaf', () => {
  it('makes the leaf the issue describes', () => {
    const now = new Date('2026-11-22T00:00:00.500Z');
    const leaf = buildLeaf({ issuer, identity: ID, publicKeyInfo: spki, lifetime: LIFETIME, clockSkew: SKEW, now });
    const cert = new x509.X509Certificate(leaf.der);
    expect(cert.subject).toBe(`CN=${ID}`);
    expect(cert.issuer).toBe('CN=identity.minimesh.cluster.local');
    expect(cert.notBefore.toISOString()).toBe('2026-11-21T23:59:40.000Z');
    expect(cert.notAfter.toISOString()).toBe('2026-11-23T00:00:20.000Z');
    expect(leaf.notAfter).toEqual(cert.notAfter);
    expect(Buffer.from(cert.publicKey.rawData)).toEqual(spki);
    expect(cert.signatureAlgorithm).toMatchObject({ name: 'ECDSA', hash: { name: 'SHA-256' } });

    const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
    expect(san?.names.toJSON()).toEqual([{ type: 'dns', value: ID }]);
    const ku = cert.getExtension(x509.KeyUsagesExtension);
    expect(ku?.critical).toBe(true);
    expect(ku?.usages).toBe(x509.KeyUsageFlags.digitalSignature);
    const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
    expect(eku?.usages).toEqual([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]);
    const bc = cert.getExtension(x509.BasicConstraintsExtension);
    expect(bc?.ca).toBe(false);
    const aki = cert.getExtension(x509.AuthorityKeyIdentifierExtension);
    expect(aki?.keyId).toBe(issuer.subjectKeyId?.toString('hex'));

    // Node (OpenSSL) agrees, and the issuer's key signed it.
    const node = new X509Certificate(leaf.der);
    expect(node.verify(issuer.certificate.publicKey)).toBe(true);
    expect(node.checkIssued(issuer.certificate)).toBe(true);
    expect(node.subjectAltName).toBe(`DNS:${ID}`);
    expect(node.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(node.ca).toBe(false);
    expect(node.serialNumber.toLowerCase()).toBe(leaf.serial.toString('hex'));
  });

  it('uses a fresh positive 128-bit-ish serial each time', () => {
    const serials = new Set(
      Array.from({ length: 50 }, () =>
        buildLeaf({ issuer, identity: ID, publicKeyInfo: spki, lifetime: LIFETIME, clockSkew: SKEW }).serial.toString(
          'hex',
        ),
      ),
    );
    expect(serials.size).toBe(50);
    for (const s of serials) expect(Number.parseInt(s.slice(0, 2), 16)).toBeGreaterThanOrEqual(0x40);
  });

  it('caps NotAfter at the issuer NotAfter', async () => {
    const issuerNotAfter = new Date(Date.now() + 2 * HOUR);
    const short = await issuerFrom(await createIntermediateCa(root, { notAfter: issuerNotAfter }));
    const leaf = buildLeaf({ issuer: short, identity: ID, publicKeyInfo: spki, lifetime: LIFETIME, clockSkew: SKEW });
    expect(leaf.notAfter.getTime()).toBe(Math.floor(issuerNotAfter.getTime() / 1000) * 1000);
    expect(new X509Certificate(leaf.der).validTo).toBe(new X509Certificate(short.chain[0] as Buffer).validTo);
  });

  it.each([
    ['RSA', 'RSASSA-PKCS1-v1_5', 'SHA-256'],
    ['P-384', 'ECDSA', 'SHA-384'],
  ] as const)('signs with an %s issuer', async (kind, name, hash) => {
    const other = await issuerFrom(await createIntermediateCa(root, { kind }));
    const leaf = buildLeaf({ issuer: other, identity: ID, publicKeyInfo: spki, lifetime: LIFETIME, clockSkew: SKEW });
    expect(new X509Certificate(leaf.der).verify(other.certificate.publicKey)).toBe(true);
    expect(new x509.X509Certificate(leaf.der).signatureAlgorithm).toMatchObject({ name, hash: { name: hash } });
  });

  it('leaves the subject empty and marks the SAN critical when the identity is longer than a CN may be', () => {
    const long = `${'a'.repeat(40)}.${'b'.repeat(40)}.serviceaccount.identity.minimesh.cluster.local`;
    const leaf = buildLeaf({ issuer, identity: long, publicKeyInfo: spki, lifetime: LIFETIME, clockSkew: SKEW });
    const cert = new x509.X509Certificate(leaf.der);
    expect(cert.subject).toBe('');
    expect(cert.getExtension(x509.SubjectAlternativeNameExtension)?.critical).toBe(true);
    expect(new X509Certificate(leaf.der).subjectAltName).toBe(`DNS:${long}`);
  });

  it('writes GeneralizedTime from 2050 on', () => {
    const leaf = buildLeaf({
      issuer: { ...issuer, notAfter: new Date('2060-01-01T00:00:00Z') },
      identity: ID,
      publicKeyInfo: spki,
      lifetime: LIFETIME,
      clockSkew: SKEW,
      now: new Date('2049-12-31T12:00:00Z'),
    });
    const cert = new x509.X509Certificate(leaf.der);
    expect(cert.notBefore.toISOString()).toBe('2049-12-31T11:59:40.000Z');
    expect(cert.notAfter.toISOString()).toBe('2050-01-01T12:00:20.000Z');
  });
});

describe('leafValidity', () => {
  it('floors to whole seconds and takes the earlier end', () => {
    const now = new Date('2026-01-01T00:00:00.900Z');
    expect(
      leafValidity({ now, lifetime: HOUR, clockSkew: 10_000, issuerNotAfter: new Date('2027-01-01T00:00:00Z') }),
    ).toEqual({
      notBefore: new Date('2025-12-31T23:59:50.000Z'),
      notAfter: new Date('2026-01-01T01:00:10.000Z'),
    });
    expect(
      leafValidity({ now, lifetime: HOUR, clockSkew: 10_000, issuerNotAfter: new Date('2026-01-01T00:30:00.700Z') })
        .notAfter,
    ).toEqual(new Date('2026-01-01T00:30:00.000Z'));
  });
});
