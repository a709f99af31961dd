import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createIntermediateCa,
  createNonCaIssuer,
  createRootCa,
  privateKeyPem,
  type Ca,
} from '../../test/helpers/pki.js';
import { ISSUER_SCHEMES, loadIssuer, parseIssuer, parseTrustAnchors, type IssuerScheme } from './issuer.js';

let root: Ca;
let issuer: Ca;
let anchors: X509Certificate[];
let dir: string;

beforeAll(async () => {
  root = await createRootCa();
  issuer = await createIntermediateCa(root);
  anchors = parseTrustAnchors(root.certPem, 'ca.crt');
  dir = await mkdtemp(join(tmpdir(), 'mm-id-issuer-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const files = { certFile: '/issuer/crt.pem', keyFile: '/issuer/key.pem' };

describe('parseIssuer', () => {
  it('accepts an intermediate made as the Linkerd tutorial makes it (SEC1 key) and reads what signing needs', async () => {
    const got = parseIssuer({ certPem: issuer.certPem, keyPem: await privateKeyPem(issuer.keys), anchors, ...files });
    expect(got.keyAlgorithm).toBe('ECDSA P-256');
    expect(got.signatureHash).toBe('sha256');
    expect(got.chain).toEqual([Buffer.from(issuer.cert.rawData)]);
    // The chain's earliest expiry: root and intermediate both end a year after they were made, a second
    // apart when their making crossed a second boundary, and then the root (made first) ends first.
    expect(got.notAfter.getTime()).toBe(Math.min(issuer.cert.notAfter.getTime(), root.cert.notAfter.getTime()));
    expect(got.subjectKeyId?.length).toBeGreaterThan(0);
    expect(new X509Certificate(got.chain[0] as Buffer).subject).toBe('CN=identity.minimesh.cluster.local');
  });

  it('accepts a PKCS#8 key too', async () => {
    expect(
      parseIssuer({ certPem: issuer.certPem, keyPem: await privateKeyPem(issuer.keys, 'pkcs8'), anchors, ...files })
        .keyAlgorithm,
    ).toBe('ECDSA P-256');
  });

  it('accepts an RSA issuer', async () => {
    const rsa = await createIntermediateCa(root, { kind: 'RSA' });
    const got = parseIssuer({ certPem: rsa.certPem, keyPem: await privateKeyPem(rsa.keys), anchors, ...files });
    expect(got.keyAlgorithm).toBe('RSA');
  });

  it('sends further intermediates along, never the root, and caps NotAfter by the earliest in the chain', async () => {
    const soon = new Date(Date.now() + 2 * 3600_000);
    const mid = await createIntermediateCa(root, { name: 'mid', pathLength: 1, notAfter: soon });
    const leafCa = await createIntermediateCa(mid, { name: 'issuer-under-mid' });
    const got = parseIssuer({
      certPem: leafCa.certPem + mid.certPem + root.certPem,
      keyPem: await privateKeyPem(leafCa.keys),
      anchors,
      ...files,
    });
    expect(got.chain.map((d) => new X509Certificate(d).subject)).toEqual(['CN=issuer-under-mid', 'CN=mid']);
    expect(got.notAfter.getTime()).toBe(Math.floor(soon.getTime() / 1000) * 1000);
  });

  const own = async (ca: Promise<Ca>): Promise<{ certPem: string; keyPem: string }> => {
    const c = await ca;
    return { certPem: c.certPem, keyPem: await privateKeyPem(c.keys) };
  };
  it.each([
    [
      'is not a CA',
      () => own(createNonCaIssuer(root)),
      /^\/issuer\/crt\.pem: issuer "CN=not-a-ca.minimesh.cluster.local" is not a CA: basicConstraints says CA:FALSE$/,
    ],
    [
      'lacks keyCertSign',
      () => own(createIntermediateCa(root, { certSign: false })),
      /^\/issuer\/crt\.pem: .* is not a CA: keyUsage lacks keyCertSign$/,
    ],
    [
      'does not chain to the anchors',
      async () => own(createIntermediateCa(await createRootCa({ name: 'someone-else' }))),
      /^\/issuer\/crt\.pem: issuer "CN=identity.minimesh.cluster.local" does not chain to the trust anchors \(CN=root.minimesh.cluster.local\)$/,
    ],
    [
      'has a key that does not match',
      async () => ({ certPem: issuer.certPem, keyPem: (await own(createIntermediateCa(root))).keyPem }),
      /^\/issuer\/key\.pem: private key does not match the issuer certificate in \/issuer\/crt\.pem$/,
    ],
    [
      'has expired',
      () =>
        own(
          createIntermediateCa(root, {
            notBefore: new Date(Date.now() - 7200_000),
            notAfter: new Date(Date.now() - 3600_000),
          }),
        ),
      /^\/issuer\/crt\.pem: issuer expired at /,
    ],
    [
      'has no certificate',
      async () => ({ certPem: 'hello', keyPem: await privateKeyPem(issuer.keys) }),
      /^\/issuer\/crt\.pem: holds no PEM certificate$/,
    ],
  ])('refuses an issuer that %s, naming the file', async (_name, make, message) => {
    const { certPem, keyPem } = await make();
    expect(() => parseIssuer({ certPem, keyPem, anchors, ...files })).toThrow(message);
  });

  it('caps NotAfter at the trust anchor too, and refuses an issuer whose anchor has expired', async () => {
    const shortRoot = await createRootCa({ name: 'short-root', notAfter: new Date(Date.now() + 3 * 3600_000) });
    const under = await createIntermediateCa(shortRoot);
    const got = parseIssuer({
      certPem: under.certPem,
      keyPem: await privateKeyPem(under.keys),
      anchors: parseTrustAnchors(shortRoot.certPem, 'ca.crt'),
      ...files,
    });
    expect(got.notAfter.getTime()).toBe(shortRoot.cert.notAfter.getTime());
    const oldRoot = await createRootCa({
      name: 'old-root',
      notBefore: new Date(Date.now() - 7200_000),
      notAfter: new Date(Date.now() - 3600_000),
    });
    const orphan = await createIntermediateCa(oldRoot);
    const orphanKey = await privateKeyPem(orphan.keys);
    expect(() =>
      parseIssuer({
        certPem: orphan.certPem,
        keyPem: orphanKey,
        anchors: parseTrustAnchors(oldRoot.certPem, 'ca.crt'),
        ...files,
      }),
    ).toThrow(
      /^\/issuer\/crt\.pem: a certificate between the issuer and the trust anchor \(or the anchor\) expired at /,
    );
  });

  it('refuses an unreadable key, naming the key file and not printing the key', () => {
    const bogus = '-----BEGIN EC PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END EC PRIVATE KEY-----\n';
    try {
      parseIssuer({ certPem: issuer.certPem, keyPem: bogus, anchors, ...files });
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toMatch(/^\/issuer\/key\.pem: cannot read the private key/);
      expect((err as Error).message).not.toContain('c2VjcmV0');
    }
  });
});

describe('loadIssuer: schemes', () => {
  it.each(Object.entries(ISSUER_SCHEMES) as [IssuerScheme, { cert: string; key: string }][])(
    '%s reads %o',
    async (scheme, names) => {
      const d = join(dir, scheme.replace('/', '_'));
      await rm(d, { recursive: true, force: true });
      await mkdir(d);
      await writeFile(join(d, names.cert), issuer.certPem);
      await writeFile(join(d, names.key), await privateKeyPem(issuer.keys));
      expect((await loadIssuer({ dir: d, scheme, anchors })).fingerprint).toBe(
        new X509Certificate(issuer.certPem).fingerprint256,
      );
      const other = scheme === 'minimesh.io/tls' ? 'kubernetes.io/tls' : 'minimesh.io/tls';
      const otherNames = ISSUER_SCHEMES[other];
      await expect(loadIssuer({ dir: d, scheme: other, anchors })).rejects.toThrow(
        new RegExp(`${otherNames.cert.replace('.', '\\.')}: cannot read the issuer certificate \\(ENOENT\\)`),
      );
    },
  );
});
