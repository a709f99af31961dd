// @minimesh/identity: the mesh certificate authority.
export { IdentityError, isIdentityError, type IdentityErrorCode } from './errors.js';
export { parseCsr, validateCsr, type ParsedCsr, type ValidCsr } from './ca/csr.js';
export {
  ISSUER_SCHEMES,
  isIssuerScheme,
  issuerFiles,
  parseIssuer,
  loadIssuer,
  parseCertificates,
  parseTrustAnchors,
  readTrustAnchors,
  type Issuer,
  type IssuerScheme,
  type ParseIssuerOptions,
} from './ca/issuer.js';
export { buildLeaf, leafValidity, randomSerial, type Leaf, type LeafIssuer, type LeafOptions } from './ca/leaf.js';
export { inThreadCrypto, type CertifyCrypto, type CheckedCsr, type SignedLeaf } from './ca/certify-crypto.js';
export {
  createSigningPool,
  parseCertifyWorkers,
  MAX_CERTIFY_WORKERS,
  MAX_AUTO_CERTIFY_WORKERS,
  type SigningPool,
  type SigningPoolOptions,
} from './ca/signing-pool.js';
export {
  createCertifier,
  identityForUser,
  type Certifier,
  type CertifierOptions,
  type CertifyInput,
  type CertifyOutput,
} from './certifier.js';
export {
  createKubeTokenReviewer,
  TOKEN_REVIEW_PATH,
  THROTTLED_CACHE_TTL_MS,
  type TokenReviewer,
  type TokenReviewResult,
  type KubeTokenReviewer,
} from './k8s/token-reviewer.js';
export { startApiProbe, type ApiProbe } from './k8s/api-probe.js';
export {
  createIssuerWatcher,
  type IssuerWatcher,
  type IssuerWatcherOptions,
  type ReloadOutcome,
} from './issuer-watcher.js';
export { createIdentityMetrics, type IdentityMetrics, type CertifyResult } from './metrics.js';
export {
  startIdentityServer,
  toGrpcStatus,
  IDENTITY_SERVICE_NAME,
  DEFAULT_CERTIFY_CONCURRENCY,
  DEFAULT_LISTEN_BACKLOG,
  type IdentityServer,
  type IdentityServerOptions,
} from './server/identity-server.js';
export { createCertifyQueue, type CertifyQueue, type CertifyQueueOptions } from './server/certify-queue.js';
