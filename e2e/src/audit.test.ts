import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../drivers/types.js';
import { findAuditLeaks, summarizeAudit } from './audit.js';

const DST = 'system:serviceaccount:minimesh:minimesh-destination';
const ev = (e: Partial<AuditEvent>): AuditEvent => ({
  stage: 'ResponseComplete',
  verb: 'get',
  requestURI: '/',
  user: { username: 'x' },
  ...e,
});

describe('summarizeAudit', () => {
  it('finds watches, Lease renewals, TokenReviews, mutations and denials by service account', () => {
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const lease = (ms: number): AuditEvent =>
      ev({
        user: { username: DST },
        verb: 'update',
        objectRef: { resource: 'leases', name: 'minimesh-destination-endpoint-write' },
        responseStatus: { code: 200 },
        stageTimestamp: new Date(t0 + ms).toISOString(),
      });
    const r = summarizeAudit(
      [
        ev({
          user: { username: DST },
          verb: 'watch',
          stage: 'ResponseStarted',
          requestURI: '/api/v1/services?allowWatchBookmarks=true&watch=true',
          objectRef: { resource: 'services' },
        }),
        ev({ user: { username: DST }, verb: 'list', requestURI: '/api/v1/pods', objectRef: { resource: 'pods' } }),
        lease(0),
        lease(2000),
        lease(4100),
        lease(6000),
        ev({
          user: { username: 'system:serviceaccount:minimesh:minimesh-identity' },
          verb: 'create',
          objectRef: { resource: 'tokenreviews' },
          // Metadata level: no bodies, only the status code.
          responseStatus: { code: 201 },
        }),
        ev({
          user: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
          verb: 'create',
          objectRef: { resource: 'pods', namespace: 'app' },
          responseObject: { metadata: { name: 'client-1' } },
          annotations: {
            'mutation.webhook.admission.k8s.io/round_0_index_0':
              '{"configuration":"c","webhook":"minimesh-injector.minimesh.io","mutated":true}',
          },
        }),
        ev({
          user: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
          verb: 'create',
          objectRef: { resource: 'pods', namespace: 'other' },
          annotations: {
            'mutation.webhook.admission.k8s.io/round_0_index_0':
              '{"webhook":"minimesh-injector.minimesh.io","mutated":true}',
          },
        }),
        ev({
          user: { username: 'system:serviceaccount:minimesh:minimesh-injector' },
          verb: 'list',
          requestURI: '/api/v1/secrets',
          responseStatus: { code: 403 },
          annotations: { 'authorization.k8s.io/decision': 'forbid' },
        }),
        // A 403 RBAC allowed (namespace terminating) is not a denial.
        ev({
          user: { username: DST },
          verb: 'create',
          requestURI: '/apis/discovery.k8s.io/v1/namespaces/gone/endpointslices',
          responseStatus: { code: 403 },
          annotations: { 'authorization.k8s.io/decision': 'allow' },
        }),
      ],
      'minimesh',
      ['app'],
    );
    expect(r.destinationWatches).toEqual(['services']);
    expect(r.leaseRenewals).toHaveLength(4);
    expect(r.leaseRenewMedianMs).toBe(2000);
    expect(r.tokenReviews).toEqual([{ code: 201 }]);
    expect(r.mutatedPods.map((p) => p.name)).toEqual(['client-1']);
    expect(r.denied).toEqual([
      { user: 'system:serviceaccount:minimesh:minimesh-injector', verb: 'list', uri: '/api/v1/secrets', code: 403 },
    ]);
  });
});

describe('findAuditLeaks', () => {
  const pem = `-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oRzN+tG0MBl+oAoGCCqGSM49
AwEHoUQDQgAE7Ic5FOb1VpxZ8JwjTqcTmY4UD1k6Lm8PqkHjU3oZcnTi+DjG4zP5
-----END EC PRIVATE KEY-----
`;
  const jwt = 'eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMifQ.c2lnbmF0dXJlc2lnbmF0dXJlc2ln';
  const secret = (data: Record<string, string>) =>
    ev({ verb: 'create', objectRef: { resource: 'secrets' }, requestObject: { data } });

  it('finds the key as PEM text, as base64 in a Secret, any private key, and bearer tokens', () => {
    const body = pem.split('\n')[1] as string;
    expect(
      findAuditLeaks([ev({ requestObject: { stringData: { k: pem } } })], [{ name: 'issuer', pem }]).map((l) => l.what),
    ).toEqual(expect.arrayContaining(['a PEM private key', 'issuer (PEM body)']));
    expect(
      findAuditLeaks([secret({ 'tls.key': Buffer.from(pem).toString('base64') })], [{ name: 'issuer', pem }]),
    ).toEqual([expect.objectContaining({ what: 'issuer (base64 of the PEM)', verb: 'create' })]);
    expect(findAuditLeaks([ev({ requestObject: { body } })], [{ name: 'issuer', pem }])[0]?.what).toBe(
      'issuer (PEM body)',
    );
    expect(findAuditLeaks([ev({ responseObject: { status: { token: jwt } } })])[0]?.what).toBe('a bearer token (JWT)');
    expect(findAuditLeaks([secret({ token: Buffer.from(jwt).toString('base64') })])[0]?.what).toBe(
      'a bearer token (JWT, base64 in a Secret)',
    );
  });

  it('finds nothing in Metadata-level events', () => {
    const meta = [
      ev({ verb: 'create', objectRef: { resource: 'secrets', name: 'issuer' }, responseStatus: { code: 201 } }),
      ev({ verb: 'create', objectRef: { resource: 'tokenreviews' }, responseStatus: { code: 201 } }),
    ];
    expect(findAuditLeaks(meta, [{ name: 'issuer', pem }])).toEqual([]);
  });
});
