// The certificate checks — Linkerd users' #7 pain point (a trust anchor or issuer that expires a
// year after install takes the whole mesh down). The check is pure (PEM text and a clock in, results
// out); its read of the ConfigMap and Secret is beside it, at the end of the file.
// node:crypto's X509Certificate reads, verifies and matches keys; no signing is needed here.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { KubeClient } from '@minimesh/kube';
import { describeKubeError } from '../kube.js';
import { fail, ok, warn, type CheckResult } from './types.js';

export const CERT_CATEGORY = 'minimesh-identity';
export const DEFAULT_WARN_DAYS = 60;
const DAY = 86_400_000;

export interface CertificateInputs {
  /** PEM bundle of the trust anchors (ConfigMap minimesh-identity-trust-roots, key ca-bundle.crt). */
  trustAnchorsPem: string | undefined;
  /** The issuer certificate (Secret minimesh-identity-issuer, crt.pem). */
  issuerCrtPem: string | undefined;
  /** The issuer key (Secret, key.pem), when readable. */
  issuerKeyPem?: string | undefined;
  /** Why the anchors / issuer are missing, when they are (default: not found). */
  trustAnchorsMissing?: string;
  issuerMissing?: string;
  now?: Date;
  warnWithinDays?: number;
}

/** Every CERTIFICATE block of a PEM bundle. */
export function splitPemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

export function parseAll(pem: string): { certs: X509Certificate[]; error?: string } {
  const blocks = splitPemCertificates(pem);
  if (blocks.length === 0) return { certs: [], error: 'no PEM CERTIFICATE block found' };
  const certs: X509Certificate[] = [];
  for (const [i, b] of blocks.entries()) {
    try {
      certs.push(new X509Certificate(b));
    } catch (err) {
      return { certs, error: `certificate ${i + 1}: ${(err as Error).message}` };
    }
  }
  return { certs };
}

export function cn(cert: X509Certificate): string {
  const m = /CN=([^\n,]+)/.exec(cert.subject);
  return m ? (m[1] as string) : cert.subject.replace(/\n/g, ', ');
}

function days(ms: number): string {
  const d = ms / DAY;
  if (Math.abs(d) >= 2) return `${Math.floor(Math.abs(d))} days`;
  const h = Math.abs(ms) / 3_600_000;
  return `${h.toFixed(1)} hours`;
}

/** Validity of one set of certificates: expired/not yet valid → fail; expiring within N days → warn. */
function validity(what: string, certs: X509Certificate[], now: Date, warnDays: number): CheckResult[] {
  const are = what.endsWith('s') ? 'are' : 'is';
  const their = what.endsWith('s') ? 'their' : 'its';
  const t = now.getTime();
  const results: CheckResult[] = [];
  const expired = certs.filter((c) => Date.parse(c.validTo) <= t);
  const future = certs.filter((c) => Date.parse(c.validFrom) > t);
  if (expired.length > 0 || future.length > 0) {
    const parts = [
      ...expired.map(
        (c) =>
          `${cn(c)} expired on ${new Date(Date.parse(c.validTo)).toISOString()} (${days(t - Date.parse(c.validTo))} ago)`,
      ),
      ...future.map((c) => `${cn(c)} is not valid before ${new Date(Date.parse(c.validFrom)).toISOString()}`),
    ];
    results.push(
      fail(
        CERT_CATEGORY,
        `${what} ${are} within ${their} validity period`,
        parts.join('; '),
        'an issuer: minimesh certs create --ca ca.crt --ca-key ca.key, then helm upgrade; a trust anchor: docs/certificates.md',
      ),
    );
    return results;
  }
  results.push(ok(CERT_CATEGORY, `${what} ${are} within ${their} validity period`));
  const soon = certs.filter((c) => Date.parse(c.validTo) - t < warnDays * DAY);
  if (soon.length > 0) {
    results.push(
      warn(
        CERT_CATEGORY,
        `${what} ${are} valid for at least ${warnDays} days`,
        soon
          .map(
            (c) =>
              `${cn(c)} expires on ${new Date(Date.parse(c.validTo)).toISOString()} (in ${days(Date.parse(c.validTo) - t)})`,
          )
          .join('; '),
        'rotate before then: docs/certificates.md (an issuer: minimesh certs create --ca ca.crt --ca-key ca.key)',
      ),
    );
  } else {
    results.push(ok(CERT_CATEGORY, `${what} ${are} valid for at least ${warnDays} days`));
  }
  return results;
}

export function checkCertificates(input: CertificateInputs): CheckResult[] {
  const now = input.now ?? new Date();
  const warnDays = input.warnWithinDays ?? DEFAULT_WARN_DAYS;
  const results: CheckResult[] = [];

  let anchors: X509Certificate[] = [];
  if (input.trustAnchorsPem === undefined) {
    results.push(
      fail(
        CERT_CATEGORY,
        'trust anchors are readable',
        input.trustAnchorsMissing ?? 'ConfigMap minimesh-identity-trust-roots (ca-bundle.crt) not found',
      ),
    );
  } else {
    const parsed = parseAll(input.trustAnchorsPem);
    if (parsed.error) {
      results.push(fail(CERT_CATEGORY, 'trust anchors use a valid format', parsed.error));
    } else {
      anchors = parsed.certs;
      results.push(
        ok(
          CERT_CATEGORY,
          'trust anchors use a valid format',
          `${anchors.length} certificate(s): ${anchors.map(cn).join(', ')}`,
        ),
      );
      const notCa = anchors.filter((c) => !c.ca);
      results.push(
        notCa.length > 0
          ? fail(CERT_CATEGORY, 'trust anchors are CAs', `${notCa.map(cn).join(', ')}: basicConstraints CA is not set`)
          : ok(CERT_CATEGORY, 'trust anchors are CAs'),
      );
      results.push(...validity('trust anchors', anchors, now, warnDays));
    }
  }

  if (input.issuerCrtPem === undefined) {
    results.push(
      fail(
        CERT_CATEGORY,
        'issuer certificate is readable',
        input.issuerMissing ?? 'Secret minimesh-identity-issuer (crt.pem) not found',
      ),
    );
    return results;
  }
  const parsed = parseAll(input.issuerCrtPem);
  const issuer = parsed.certs[0];
  if (parsed.error || !issuer) {
    results.push(fail(CERT_CATEGORY, 'issuer certificate uses a valid format', parsed.error ?? 'no certificate'));
    return results;
  }
  results.push(ok(CERT_CATEGORY, 'issuer certificate uses a valid format', cn(issuer)));
  results.push(
    issuer.ca
      ? ok(CERT_CATEGORY, 'issuer certificate is a CA')
      : fail(
          CERT_CATEGORY,
          'issuer certificate is a CA',
          `${cn(issuer)}: basicConstraints CA is not set, so it cannot sign proxy certificates`,
        ),
  );
  results.push(...validity('issuer certificate', [issuer], now, warnDays));
  if (anchors.length > 0) {
    // The issuer, possibly through intermediates carried after it in crt.pem, must lead to an anchor.
    const chain = [issuer, ...parsed.certs.slice(1)];
    const top = chain[chain.length - 1] as X509Certificate;
    const linksOk = chain.every(
      (c, i) =>
        i === chain.length - 1 ||
        (c.checkIssued(chain[i + 1] as X509Certificate) && c.verify((chain[i + 1] as X509Certificate).publicKey)),
    );
    const anchor = anchors.find((a) => top.checkIssued(a) && top.verify(a.publicKey));
    if (linksOk && anchor) {
      results.push(
        ok(CERT_CATEGORY, 'issuer certificate is issued by the trust anchor', `${cn(issuer)} ← ${cn(anchor)}`),
      );
    } else {
      results.push(
        fail(
          CERT_CATEGORY,
          'issuer certificate is issued by the trust anchor',
          `${cn(issuer)} (issuer ${issuer.issuer.replace(/\n/g, ', ')}) is not signed by any of the trust anchors (${anchors.map(cn).join(', ')}); proxies would reject every certificate it signs`,
          'install an issuer made from the current trust anchor: minimesh certs create --ca ca.crt --ca-key ca.key, then helm upgrade (docs/certificates.md)',
        ),
      );
    }
  }
  if (input.issuerKeyPem !== undefined) {
    try {
      const key = createPrivateKey(input.issuerKeyPem);
      results.push(
        issuer.checkPrivateKey(key)
          ? ok(CERT_CATEGORY, 'issuer key matches the issuer certificate')
          : fail(
              CERT_CATEGORY,
              'issuer key matches the issuer certificate',
              'key.pem is not the private key of crt.pem',
            ),
      );
    } catch (err) {
      results.push(
        fail(CERT_CATEGORY, 'issuer key matches the issuer certificate', `key.pem: ${(err as Error).message}`),
      );
    }
  }
  return results;
}

// --- The read (thin I/O) ---

/** The trust anchors (ConfigMap minimesh-identity-trust-roots) and issuer (Secret minimesh-identity-issuer) of a control plane. */
export async function readCertificates(
  client: KubeClient,
  namespace: string,
): Promise<Omit<CertificateInputs, 'now' | 'warnWithinDays'>> {
  let trustAnchorsPem: string | undefined;
  let trustAnchorsMissing: string | undefined;
  try {
    const cm = await client.get<{ data?: Record<string, string> }>(
      `/api/v1/namespaces/${namespace}/configmaps/minimesh-identity-trust-roots`,
    );
    trustAnchorsPem = cm?.data?.['ca-bundle.crt'];
    if (cm && trustAnchorsPem === undefined)
      trustAnchorsMissing = 'ConfigMap minimesh-identity-trust-roots has no ca-bundle.crt';
  } catch (err) {
    trustAnchorsMissing = `ConfigMap minimesh-identity-trust-roots: ${describeKubeError(err)}`;
  }
  let issuerCrtPem: string | undefined;
  let issuerKeyPem: string | undefined;
  let issuerMissing: string | undefined;
  try {
    const secret = await client.get<{ data?: Record<string, string> }>(
      `/api/v1/namespaces/${namespace}/secrets/minimesh-identity-issuer`,
    );
    const crt = secret?.data?.['crt.pem'];
    const key = secret?.data?.['key.pem'];
    if (crt !== undefined) issuerCrtPem = Buffer.from(crt, 'base64').toString('utf8');
    else if (secret) issuerMissing = 'Secret minimesh-identity-issuer has no crt.pem';
    if (key !== undefined) issuerKeyPem = Buffer.from(key, 'base64').toString('utf8');
  } catch (err) {
    issuerMissing = `Secret minimesh-identity-issuer: ${describeKubeError(err)}`;
  }
  return {
    trustAnchorsPem,
    issuerCrtPem,
    ...(issuerKeyPem !== undefined ? { issuerKeyPem } : {}),
    ...(trustAnchorsMissing !== undefined ? { trustAnchorsMissing } : {}),
    ...(issuerMissing !== undefined ? { issuerMissing } : {}),
  };
}
