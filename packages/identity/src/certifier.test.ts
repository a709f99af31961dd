import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@minimesh/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCsr,
  createIntermediateCa,
  createRootCa,
  issuerOf,
  privateKeyPem,
  writeSecretVolume,
} from '../test/helpers/pki.js';
import { inThreadCrypto, type CertifyCrypto } from './ca/certify-crypto.js';
import { parseTrustAnchors, type Issuer } from './ca/issuer.js';
import { createSigningPool, type SigningPool } from './ca/signing-pool.js';
import { createCertifier, identityForUser, type CertifyInput } from './certifier.js';
import { IdentityError, type IdentityErrorCode } from './errors.js';
import { createIssuerWatcher } from './issuer-watcher.js';
import type { TokenReviewer } from './k8s/token-reviewer.js';

const NAMES = { controllerNamespace: 'minimesh', trustDomain: 'cluster.local' };
const WEB = 'web.default.serviceaccount.identity.minimesh.cluster.local';

let issuer: Issuer;
let csr: Buffer;
let pool: SigningPool;
const reviewed: string[] = [];
const reviewer: TokenReviewer = {
  async review(token) {
    reviewed.push(token);
    if (token === 'web-token') return { authenticated: true, username: 'system:serviceaccount:default:web' };
    if (token === 'db-token') return { authenticated: true, username: 'system:serviceaccount:default:db' };
    if (token === 'admin-token') return { authenticated: true, username: 'kubernetes-admin' };
    if (token === 'broken')
      throw new IdentityError('MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED', 'TokenReview: ECONNREFUSED');
    return { authenticated: false, reason: 'invalid bearer token' };
  },
};

beforeAll(async () => {
  const root = await createRootCa();
  const ca = await createIntermediateCa(root);
  issuer = await issuerOf(ca, root);
  csr = (await createCsr({ dns: [WEB] })).der;
  pool = await createSigningPool({ size: 1 });
});
afterAll(() => pool.close());

// Every case runs with the CSR check and signing on this thread and on a worker thread (--certify-workers).
const MODES = ['in-thread', 'worker thread'] as const;
type Mode = (typeof MODES)[number];
const cryptoFor = (mode: Mode): CertifyCrypto => (mode === 'in-thread' ? inThreadCrypto : pool);

function certifier(mode: Mode, current: Issuer | null = issuer, now?: () => Date) {
  return createCertifier({
    issuer: () => current ?? undefined,
    reviewer,
    ...NAMES,
    lifetime: 86_400_000,
    clockSkew: 20_000,
    ...(now ? { now } : {}),
    crypto: cryptoFor(mode),
  });
}

describe('identityForUser', () => {
  it.each([
    ['system:serviceaccount:default:web', WEB],
    ['system:serviceaccount:kube-system:coredns', 'coredns.kube-system.serviceaccount.identity.minimesh.cluster.local'],
    ['system:serviceaccount:Bad_NS:web', undefined],
    ['system:serviceaccount:default', undefined],
    ['kubernetes-admin', undefined],
  ])('%s → %s', (user, want) => expect(identityForUser(user, NAMES)).toBe(want));
});

describe.each(MODES)('certify (%s)', (mode) => {
  it('issues a leaf for a matching token and CSR, with the chain and valid_until', async () => {
    const out = await certifier(mode).certify({ identity: WEB, token: Buffer.from('web-token\n'), csr });
    expect(reviewed.at(-1)).toBe('web-token');
    const leaf = new X509Certificate(out.leaf);
    expect(leaf.subjectAltName).toBe(`DNS:${WEB}`);
    expect(out.chain).toEqual(issuer.chain);
    expect(out.validUntil.getTime()).toBe(new Date(leaf.validTo).getTime());
  });

  const base = (): CertifyInput => ({ identity: WEB, token: Buffer.from('web-token'), csr });
  type Case = [
    name: string,
    input: () => CertifyInput,
    code: IdentityErrorCode,
    message: RegExp,
    opts?: { noIssuer?: boolean; reviews?: boolean },
  ];
  const cases: Case[] = [
    [
      'no issuer loaded (checked before anything else)',
      () => ({ identity: '', token: Buffer.alloc(0), csr: Buffer.alloc(0) }),
      'MINIMESH_IDENTITY_ISSUER_UNAVAILABLE',
      /^no valid issuer is loaded$/,
      { noIssuer: true },
    ],
    [
      'nothing present',
      () => ({ identity: '', token: Buffer.alloc(0), csr: Buffer.alloc(0) }),
      'MINIMESH_IDENTITY_REQUEST_INCOMPLETE',
      /^request has no identity, token, certificate_signing_request$/,
    ],
    [
      'no token',
      () => ({ ...base(), token: Buffer.alloc(0) }),
      'MINIMESH_IDENTITY_REQUEST_INCOMPLETE',
      /^request has no token$/,
    ],
    [
      'no CSR',
      () => ({ ...base(), csr: Buffer.alloc(0) }),
      'MINIMESH_IDENTITY_REQUEST_INCOMPLETE',
      /^request has no certificate_signing_request$/,
    ],
    [
      'a CSR for another identity (checked before the token)',
      () => ({
        ...base(),
        identity: 'db.default.serviceaccount.identity.minimesh.cluster.local',
        token: Buffer.from('nobody'),
      }),
      'MINIMESH_IDENTITY_CSR_INVALID',
      /does not match the requested identity/,
    ],
    [
      'garbage CSR',
      () => ({ ...base(), csr: Buffer.from('garbage') }),
      'MINIMESH_IDENTITY_CSR_INVALID',
      /^CSR: not a DER-encoded/,
    ],
    [
      'an unauthenticated token',
      () => ({ ...base(), token: Buffer.from('nobody') }),
      'MINIMESH_IDENTITY_TOKEN_UNAUTHENTICATED',
      /^token not authenticated: invalid bearer token$/,
      { reviews: true },
    ],
    [
      "another service account's token",
      () => ({ ...base(), token: Buffer.from('db-token') }),
      'MINIMESH_IDENTITY_IDENTITY_MISMATCH',
      /^token belongs to system:serviceaccount:default:db \(identity db\.default\..*\), not to the requested identity web\.default/,
      { reviews: true },
    ],
    [
      'a token of a user that is not a service account',
      () => ({ ...base(), token: Buffer.from('admin-token') }),
      'MINIMESH_IDENTITY_IDENTITY_MISMATCH',
      /^token belongs to kubernetes-admin, not a service account/,
      { reviews: true },
    ],
    [
      'an API server that cannot be asked',
      () => ({ ...base(), token: Buffer.from('broken') }),
      'MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED',
      /ECONNREFUSED/,
      { reviews: true },
    ],
  ];
  it.each(cases)('refuses %s', async (_name, input, code, message, opts) => {
    const before = reviewed.length;
    const c = certifier(mode, opts?.noIssuer ? null : issuer);
    const err = await c.certify(input()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(IdentityError);
    expect((err as IdentityError).code).toBe(code);
    expect((err as Error).message).toMatch(message);
    // The TokenReview is only made once everything before it passed.
    expect(reviewed.length - before).toBe(opts?.reviews ? 1 : 0);
  });

  it('refuses with Unavailable once the issuer has expired', async () => {
    const later = () => new Date(issuer.notAfter.getTime() + 1000);
    await expect(certifier(mode, issuer, later).certify(base())).rejects.toMatchObject({
      code: 'MINIMESH_IDENTITY_ISSUER_UNAVAILABLE',
      message: expect.stringMatching(/^the issuer expired at /),
    });
  });
});

describe.each(MODES)('an issuer reload (%s)', (mode) => {
  it('is what the next Certify signs with', async () => {
    const root = await createRootCa();
    const [a, b] = [
      await createIntermediateCa(root),
      await createIntermediateCa(root, { name: 'issuer-b.minimesh.cluster.local' }),
    ];
    const dir = await mkdtemp(join(tmpdir(), 'mm-id-certifier-reload-'));
    const files = async (ca: typeof a) => ({ 'crt.pem': ca.certPem, 'key.pem': await privateKeyPem(ca.keys) });
    await writeSecretVolume(dir, await files(a));
    const watcher = await createIssuerWatcher({
      dir,
      scheme: 'minimesh.io/tls',
      anchors: parseTrustAnchors(root.certPem, 'ca.crt'),
      logger: createLogger({ name: 'test', level: 'error' }),
      pollIntervalMs: 0,
      debounceMs: 60_000,
    });
    try {
      const c = createCertifier({
        issuer: () => watcher.current(),
        reviewer,
        ...NAMES,
        lifetime: 86_400_000,
        clockSkew: 20_000,
        crypto: cryptoFor(mode),
      });
      const input = { identity: WEB, token: Buffer.from('web-token'), csr };
      const first = new X509Certificate((await c.certify(input)).leaf);
      expect(first.issuer).toBe('CN=identity.minimesh.cluster.local');
      expect(first.verify(new X509Certificate(a.certPem).publicKey)).toBe(true);
      await writeSecretVolume(dir, await files(b));
      expect(await watcher.reload()).toBe('updated');
      const out = await c.certify(input);
      const second = new X509Certificate(out.leaf);
      expect(second.issuer).toBe('CN=issuer-b.minimesh.cluster.local');
      expect(second.verify(new X509Certificate(b.certPem).publicKey)).toBe(true);
      expect(second.verify(new X509Certificate(a.certPem).publicKey)).toBe(false);
      expect(out.chain[0]).toEqual(new X509Certificate(b.certPem).raw);
    } finally {
      watcher.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
