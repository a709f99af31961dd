// identity's Prometheus metrics: Certify outcomes and latency, the issuer's remaining lifetime, reloads.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Issuer } from './ca/issuer.js';

/** Result labels of identity_certify_requests_total: one per gRPC outcome. */
export type CertifyResult =
  'ok' | 'unavailable' | 'invalid_argument' | 'unauthenticated' | 'permission_denied' | 'internal' | 'cancelled';

export interface IdentityMetrics {
  certifyRequests: Counter<'result'>;
  certifyDuration: Histogram<'result'>;
  /** Certify calls waiting for a slot (src/server/certify-queue.ts). */
  certifyQueued: Gauge;
  issuerReloads: Counter<'result'>;
}

export function createIdentityMetrics(
  registry: Registry,
  currentIssuer: () => Issuer | undefined,
  now: () => number = Date.now,
): IdentityMetrics {
  new Gauge({
    name: 'identity_issuer_cert_ttl_seconds',
    help: 'Seconds until the loaded issuer certificate (or the earliest in its chain) expires; absent while no issuer is loaded.',
    registers: [registry],
    collect() {
      this.reset();
      const issuer = currentIssuer();
      if (issuer) this.set((issuer.notAfter.getTime() - now()) / 1000);
    },
  });
  return {
    certifyRequests: new Counter({
      name: 'identity_certify_requests_total',
      help: 'Certify requests by result.',
      labelNames: ['result'],
      registers: [registry],
    }),
    certifyDuration: new Histogram({
      name: 'identity_certify_duration_seconds',
      help: 'Certify latency, including the TokenReview, by result.',
      labelNames: ['result'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    }),
    certifyQueued: new Gauge({
      name: 'identity_certify_queued',
      help: 'Certify calls waiting for one of the --certify-concurrency slots.',
      registers: [registry],
    }),
    issuerReloads: new Counter({
      name: 'identity_issuer_reloads_total',
      help: 'Issuer reloads after its files changed, by result (updated, refused).',
      labelNames: ['result'],
      registers: [registry],
    }),
  };
}
