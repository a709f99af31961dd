// Certify, as domain logic: the checks in their fixed order, then the leaf. Each refusal is an
// IdentityError with its own code; src/server/ turns the codes into gRPC statuses.
import { toIdentityName } from '@minimesh/config';
import { inThreadCrypto, type CertifyCrypto } from './ca/certify-crypto.js';
import type { Issuer } from './ca/issuer.js';
import { IdentityError } from './errors.js';
import type { TokenReviewer } from './k8s/token-reviewer.js';

export interface CertifierOptions {
  /** The current issuer (the watcher's latest valid one), or undefined while none is loaded. */
  issuer: () => Issuer | undefined;
  reviewer: TokenReviewer;
  trustDomain: string;
  controllerNamespace: string;
  /** Milliseconds. */
  lifetime: number;
  /** Milliseconds. */
  clockSkew: number;
  now?: () => Date;
  /** Where the CSR check and the signing run (default: this thread; ./ca/signing-pool.ts: worker threads). */
  crypto?: CertifyCrypto;
}

export interface CertifyInput {
  identity: string;
  token: Buffer;
  csr: Buffer;
}

export interface CertifyOutput {
  leaf: Buffer;
  /** The issuer chain, DER, issuer first. */
  chain: Buffer[];
  validUntil: Date;
  serial: Buffer;
}

export interface Certifier {
  certify(input: CertifyInput): Promise<CertifyOutput>;
}

const SA_USER = /^system:serviceaccount:([^:]+):([^:]+)$/;

/** The identity a TokenReview username stands for, or undefined when it is not a service account. */
export function identityForUser(
  username: string,
  opts: { controllerNamespace: string; trustDomain: string },
): string | undefined {
  const m = SA_USER.exec(username);
  if (!m) return undefined;
  try {
    return toIdentityName({
      serviceAccount: m[2] as string,
      namespace: m[1] as string,
      controlPlaneNamespace: opts.controllerNamespace,
      trustDomain: opts.trustDomain,
    });
  } catch {
    return undefined;
  }
}

export function createCertifier(opts: CertifierOptions): Certifier {
  const now = opts.now ?? (() => new Date());
  const crypto = opts.crypto ?? inThreadCrypto;
  return {
    async certify(input) {
      // 1. An issuer that can sign right now.
      const issuer = opts.issuer();
      const t = now();
      if (!issuer) throw new IdentityError('MINIMESH_IDENTITY_ISSUER_UNAVAILABLE', 'no valid issuer is loaded');
      if (t > issuer.notAfter)
        throw new IdentityError(
          'MINIMESH_IDENTITY_ISSUER_UNAVAILABLE',
          `the issuer expired at ${issuer.notAfter.toISOString()}`,
        );

      // 2. Everything present.
      const missing = [
        input.identity === '' ? 'identity' : undefined,
        input.token.length === 0 ? 'token' : undefined,
        input.csr.length === 0 ? 'certificate_signing_request' : undefined,
      ].filter((m) => m !== undefined);
      if (missing.length > 0)
        throw new IdentityError('MINIMESH_IDENTITY_REQUEST_INCOMPLETE', `request has no ${missing.join(', ')}`);

      // 3. The CSR asks for exactly the requested identity, with a P-256 key it holds.
      const csr = await crypto.checkCsr(input.csr, input.identity);

      // 4. The token is authentic for our audience.
      const review = await opts.reviewer.review(input.token.toString('utf8').trim());
      if (!review.authenticated)
        throw new IdentityError('MINIMESH_IDENTITY_TOKEN_UNAUTHENTICATED', `token not authenticated: ${review.reason}`);

      // 5. The token's service account is exactly the requested identity.
      const tokenIdentity = identityForUser(review.username, opts);
      if (tokenIdentity !== input.identity) {
        throw new IdentityError(
          'MINIMESH_IDENTITY_IDENTITY_MISMATCH',
          `token belongs to ${review.username}${tokenIdentity ? ` (identity ${tokenIdentity})` : ', not a service account'}, not to the requested identity ${input.identity}`,
        );
      }

      // 6. Sign.
      const leaf = await crypto.sign({
        issuer,
        identity: input.identity,
        publicKeyInfo: csr.publicKeyInfo,
        lifetime: opts.lifetime,
        clockSkew: opts.clockSkew,
        now: t,
      });
      return { leaf: leaf.der, chain: issuer.chain, validUntil: leaf.notAfter, serial: leaf.serial };
    },
  };
}
