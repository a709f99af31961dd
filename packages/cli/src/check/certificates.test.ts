import { beforeAll, describe, expect, it } from 'vitest';
import { createMeshCerts, type MeshCerts } from '../certs.js';
import { checkCertificates, splitPemCertificates } from './certificates.js';
import type { CheckResult } from './types.js';

const DAY = 86_400_000;

function status(results: CheckResult[], description: string): string | undefined {
  return results.find((r) => r.description === description)?.status;
}

function failures(results: CheckResult[]): string[] {
  return results.filter((r) => r.status !== 'ok').map((r) => `${r.status} ${r.description}`);
}

let fresh: MeshCerts;
let sameNames: MeshCerts;
let other: MeshCerts;
let expiring: MeshCerts;
let expired: MeshCerts;
let anchorExpiring: MeshCerts;

beforeAll(async () => {
  const now = Date.now();
  [fresh, sameNames, other, expiring, expired, anchorExpiring] = await Promise.all([
    createMeshCerts(),
    // A second `certs create` with the same names: a regenerated root whose issuer was not re-made.
    createMeshCerts(),
    createMeshCerts({ rootCommonName: 'root.other.cluster.local' }),
    createMeshCerts({ issuerLifetimeHours: 30 * 24 }),
    // Made two years ago with the Linkerd tutorial's one-year issuer: the issuer expired a year ago.
    createMeshCerts({ now: new Date(now - 730 * DAY), issuerLifetimeHours: 8760 }),
    createMeshCerts({ rootLifetimeHours: 10 * 24, issuerLifetimeHours: 5 * 24 }),
  ]);
});

describe('checkCertificates', () => {
  it('fresh certificates from `minimesh certs create` pass every check', () => {
    const r = checkCertificates({
      trustAnchorsPem: fresh.caCrt,
      issuerCrtPem: fresh.issuerCrt,
      issuerKeyPem: fresh.issuerKey,
    });
    expect(failures(r)).toEqual([]);
    expect(r.map((x) => x.description)).toEqual([
      'trust anchors use a valid format',
      'trust anchors are CAs',
      'trust anchors are within their validity period',
      'trust anchors are valid for at least 60 days',
      'issuer certificate uses a valid format',
      'issuer certificate is a CA',
      'issuer certificate is within its validity period',
      'issuer certificate is valid for at least 60 days',
      'issuer certificate is issued by the trust anchor',
      'issuer key matches the issuer certificate',
    ]);
  });

  it.each([
    [
      'an issuer expiring in 30 days warns',
      () => ({ trustAnchorsPem: expiring.caCrt, issuerCrtPem: expiring.issuerCrt }),
      ['warn issuer certificate is valid for at least 60 days'],
    ],
    [
      'an expired issuer fails',
      () => ({ trustAnchorsPem: expired.caCrt, issuerCrtPem: expired.issuerCrt }),
      ['fail issuer certificate is within its validity period'],
    ],
    [
      'an anchor expiring in 10 days warns too',
      () => ({ trustAnchorsPem: anchorExpiring.caCrt, issuerCrtPem: anchorExpiring.issuerCrt }),
      ['warn trust anchors are valid for at least 60 days', 'warn issuer certificate is valid for at least 60 days'],
    ],
    [
      'an issuer from another root does not chain',
      () => ({ trustAnchorsPem: fresh.caCrt, issuerCrtPem: other.issuerCrt }),
      ['fail issuer certificate is issued by the trust anchor'],
    ],
    [
      'an issuer with the same names but signed by another key does not chain',
      () => ({ trustAnchorsPem: fresh.caCrt, issuerCrtPem: sameNames.issuerCrt }),
      ['fail issuer certificate is issued by the trust anchor'],
    ],
    [
      'a bundle that holds the right anchor among others chains',
      () => ({ trustAnchorsPem: `${other.caCrt}${fresh.caCrt}`, issuerCrtPem: fresh.issuerCrt }),
      [],
    ],
    [
      "another issuer's key does not match",
      () => ({ trustAnchorsPem: fresh.caCrt, issuerCrtPem: fresh.issuerCrt, issuerKeyPem: other.issuerKey }),
      ['fail issuer key matches the issuer certificate'],
    ],
    [
      'a garbage key fails',
      () => ({ trustAnchorsPem: fresh.caCrt, issuerCrtPem: fresh.issuerCrt, issuerKeyPem: 'nope' }),
      ['fail issuer key matches the issuer certificate'],
    ],
    [
      'anchors that are not PEM fail',
      () => ({ trustAnchorsPem: 'hello', issuerCrtPem: fresh.issuerCrt }),
      ['fail trust anchors use a valid format'],
    ],
    [
      'a corrupt certificate body fails',
      () => ({
        trustAnchorsPem: fresh.caCrt,
        issuerCrtPem: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
      }),
      ['fail issuer certificate uses a valid format'],
    ],
    [
      'missing anchors fail',
      () => ({ trustAnchorsPem: undefined, issuerCrtPem: fresh.issuerCrt }),
      ['fail trust anchors are readable'],
    ],
    [
      'a missing issuer fails',
      () => ({ trustAnchorsPem: fresh.caCrt, issuerCrtPem: undefined }),
      ['fail issuer certificate is readable'],
    ],
  ])('%s', (_name, input, expected) => {
    expect(failures(checkCertificates(input()))).toEqual(expected);
  });

  it('uses the clock it is given: fresh certificates are not yet valid yesterday, expired in eleven years', () => {
    const yesterday = checkCertificates({
      trustAnchorsPem: fresh.caCrt,
      issuerCrtPem: fresh.issuerCrt,
      now: new Date(Date.now() - DAY),
    });
    expect(status(yesterday, 'trust anchors are within their validity period')).toBe('fail');
    const later = checkCertificates({
      trustAnchorsPem: fresh.caCrt,
      issuerCrtPem: fresh.issuerCrt,
      now: new Date(Date.now() + 11 * 365 * DAY),
    });
    expect(status(later, 'trust anchors are within their validity period')).toBe('fail');
    expect(later.find((r) => r.description === 'trust anchors are within their validity period')?.detail).toMatch(
      /root\.minimesh\.cluster\.local expired on/,
    );
  });

  it('the warning window is configurable', () => {
    const r = checkCertificates({
      trustAnchorsPem: expiring.caCrt,
      issuerCrtPem: expiring.issuerCrt,
      warnWithinDays: 7,
    });
    expect(failures(r)).toEqual([]);
  });

  it('the expiry warning says when', () => {
    const r = checkCertificates({ trustAnchorsPem: expiring.caCrt, issuerCrtPem: expiring.issuerCrt });
    expect(r.find((x) => x.status === 'warn')?.detail).toMatch(
      /identity\.minimesh\.cluster\.local expires on \d{4}-\d\d-\d\dT.* \(in (29|30) days\)/,
    );
  });

  it('splits PEM bundles', () => {
    expect(splitPemCertificates(`${fresh.caCrt}\n${fresh.issuerCrt}`)).toHaveLength(2);
    expect(splitPemCertificates('x')).toEqual([]);
  });
});
