// Reading the API server's audit log the way the Linkerd tutorial does, per minimesh service account: what each
// control-plane component did, and whether anything of theirs was refused.
import type { AuditEvent } from '../drivers/types.js';

export const sa = (cpNs: string, name: string): string => `system:serviceaccount:${cpNs}:${name}`;

export interface AuditReport {
  /** Resources destination opened watch=true streams on. */
  destinationWatches: string[];
  /** Times (ms since epoch) of destination's successful Lease updates. */
  leaseRenewals: number[];
  /** Median interval between Lease renewals, ms (NaN with fewer than two). */
  leaseRenewMedianMs: number;
  /**
   * TokenReviews identity created and their HTTP status. The audit policy logs TokenReviews at Metadata
   * level (the request carries a proxy's token), so the reviewed user is not in the log.
   */
  tokenReviews: { code: number }[];
  /** Pod CREATEs in the watched namespaces that the injector's webhook mutated (name, namespace). */
  mutatedPods: { namespace: string; name: string; annotation: string }[];
  /** Requests by minimesh service accounts that RBAC refused (authorization.k8s.io/decision: forbid). */
  denied: { user: string; verb: string; uri: string; code: number }[];
}

function median(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Summarises the audit events of the control plane in cpNs; appNamespaces are where the apps' pods are created. */
export function summarizeAudit(
  events: readonly AuditEvent[],
  cpNs: string,
  appNamespaces: readonly string[],
  leaseName = 'minimesh-destination-endpoint-write',
): AuditReport {
  const dst = sa(cpNs, 'minimesh-destination');
  const identity = sa(cpNs, 'minimesh-identity');
  const mine = new Set([dst, identity, sa(cpNs, 'minimesh-injector')]);

  const watches = new Set<string>();
  const renewals: number[] = [];
  const reviews: AuditReport['tokenReviews'] = [];
  const mutated: AuditReport['mutatedPods'] = [];
  const denied: AuditReport['denied'] = [];

  for (const e of events) {
    const user = e.user?.username ?? '';
    if (user === dst && e.verb === 'watch' && /[?&]watch=(true|1)/.test(e.requestURI) && e.objectRef?.resource) {
      watches.add(e.objectRef.resource);
    }
    if (
      user === dst &&
      e.stage === 'ResponseComplete' &&
      e.objectRef?.resource === 'leases' &&
      e.objectRef.name === leaseName &&
      (e.verb === 'update' || e.verb === 'patch') &&
      (e.responseStatus?.code ?? 0) < 300
    ) {
      renewals.push(Date.parse(e.stageTimestamp ?? e.requestReceivedTimestamp ?? ''));
    }
    if (
      user === identity &&
      e.stage === 'ResponseComplete' &&
      e.verb === 'create' &&
      e.objectRef?.resource === 'tokenreviews'
    ) {
      reviews.push({ code: e.responseStatus?.code ?? 0 });
    }
    if (
      e.stage === 'ResponseComplete' &&
      e.verb === 'create' &&
      e.objectRef?.resource === 'pods' &&
      !e.objectRef.subresource &&
      appNamespaces.includes(e.objectRef.namespace ?? '')
    ) {
      const ann = Object.entries(e.annotations ?? {}).find(
        ([k, v]) =>
          k.startsWith('mutation.webhook.admission.k8s.io/') &&
          v.includes('minimesh-injector.minimesh.io') &&
          v.includes('"mutated":true'),
      );
      if (ann)
        mutated.push({
          namespace: e.objectRef.namespace ?? '',
          name: String(e.responseObject?.metadata?.name ?? e.objectRef.name ?? '?'),
          annotation: `${ann[0]}: ${ann[1]}`,
        });
    }
    // RBAC's verdict, not any 403 (a write into a terminating namespace is a 403 that RBAC allowed).
    if (mine.has(user) && e.annotations?.['authorization.k8s.io/decision'] === 'forbid') {
      denied.push({ user, verb: e.verb, uri: e.requestURI, code: e.responseStatus?.code ?? 0 });
    }
  }
  renewals.sort((a, b) => a - b);
  const gaps = renewals.slice(1).map((t, i) => t - (renewals[i] as number));
  return {
    destinationWatches: [...watches].sort(),
    leaseRenewals: renewals,
    leaseRenewMedianMs: median(gaps),
    tokenReviews: reviews,
    mutatedPods: mutated,
    denied,
  };
}

/** One secret found in the audit log: what it is and the event that carried it. */
export interface AuditLeak {
  what: string;
  auditID: string;
  verb: string;
  uri: string;
}

// A service-account token is a JWT: base64url of {"alg":... (eyJhbGciOi) with three parts. In a
// Secret's data it is base64 again (ZXlKaGJHY2lPaU).
const JWT = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/;
const JWT_B64 = 'ZXlKaGJHY2lPaU';

/**
 * Every audit event that carries a bearer token, any private key, or the given private keys (PEM
 * text: found as their first body line, as the whole PEM in base64 — a Secret's data — or escaped in
 * JSON). Empty when the audit policy keeps Secrets, TokenRequests and TokenReviews at Metadata.
 */
export function findAuditLeaks(
  events: readonly unknown[],
  privateKeysPem: readonly { name: string; pem: string }[] = [],
): AuditLeak[] {
  const needles: { what: string; text: string }[] = [{ what: 'a PEM private key', text: 'PRIVATE KEY-----' }];
  for (const k of privateKeysPem) {
    const body = k.pem
      .split(/\r?\n/)
      .filter((l) => l && !l.startsWith('-----'))
      .map((l) => l.trim());
    if (body[0]) needles.push({ what: `${k.name} (PEM body)`, text: body[0] });
    // A Secret's data is base64 of the whole file: characters 60-120 of it encode bytes 45-90 of the
    // PEM, key material past the header and the fixed ASN.1 prefix every P-256 key shares.
    needles.push({ what: `${k.name} (base64 of the PEM)`, text: Buffer.from(k.pem).toString('base64').slice(60, 120) });
  }
  const leaks: AuditLeak[] = [];
  for (const e of events) {
    const text = JSON.stringify(e);
    const ev = e as Partial<AuditEvent> & { auditID?: string };
    const found = (what: string) =>
      leaks.push({ what, auditID: ev.auditID ?? '?', verb: ev.verb ?? '?', uri: ev.requestURI ?? '?' });
    for (const n of needles) if (text.includes(n.text)) found(n.what);
    if (JWT.test(text)) found('a bearer token (JWT)');
    if (text.includes(JWT_B64)) found('a bearer token (JWT, base64 in a Secret)');
  }
  return leaks;
}
