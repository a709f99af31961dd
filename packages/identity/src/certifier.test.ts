import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCsr, createIntermediateCa, createRootCa, privateKeyPem } from '../test/helpers/pki.js';
import { parseIssuer, parseTrustAnchors, type Issuer } from './ca/issuer.js';
import { createCertifier, identityForUser, type CertifyInput } from './certifier.js';
import { IdentityError, type IdentityErrorCode } from './errors.js';
import type { TokenReviewer } from './k8s/token-reviewer.js';

const NAMES = { controllerNamespace: 'minimesh', trustDomain: 'cluster.local' };
const WEB = 'web.default.serviceaccount.identity.minimesh.cluster.local';

let issuer: Issuer;
let csr: Buffer;
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
  issuer = parseIssuer({
    certPem: ca.certPem,
    keyPem: await privateKeyPem(ca.keys),
    anchors: parseTrustAnchors(root.certPem, 'ca.crt'),
    certFile: 'crt.pem',
    keyFile: 'key.pem',
  });
  csr = (await createCsr({ dns: [WEB] })).der;
});

function certifier(current: Issuer | null = issuer, now?: () => Date) {
  return createCertifier({
    issuer: () => current ?? undefined,
    reviewer,
    ...NAMES,
    lifetime: 86_400_000,
    clockSkew: 20_000,
    ...(now ? { now } : {}),
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

describe('certify', () => {
  it('issues a leaf for a matching token and CSR, with the chain and valid_until', async () => {
    const out = await certifier().certify({ identity: WEB, token: Buffer.from('web-token\n'), csr });
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
    const c = certifier(opts?.noIssuer ? null : issuer);
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
    await expect(certifier(issuer, later).certify(base())).rejects.toMatchObject({
      code: 'MINIMESH_IDENTITY_ISSUER_UNAVAILABLE',
      message: expect.stringMatching(/^the issuer expired at /),
    });
  });
});
