import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../drivers/types.js';
import { summarizeAudit } from './audit.js';

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
          responseObject: { status: { authenticated: true, user: { username: 'system:serviceaccount:app:client' } } },
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
    expect(r.tokenReviews).toEqual([{ user: 'system:serviceaccount:app:client', authenticated: true }]);
    expect(r.mutatedPods.map((p) => p.name)).toEqual(['client-1']);
    expect(r.denied).toEqual([
      { user: 'system:serviceaccount:minimesh:minimesh-injector', verb: 'list', uri: '/api/v1/secrets', code: 403 },
    ]);
  });
});
