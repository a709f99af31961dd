import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../drivers/types.js';
import { parseCanIList, permissionsUsed, unusedPermissions } from './rbac.js';

const DST = 'system:serviceaccount:minimesh:minimesh-destination';
const ev = (e: Partial<AuditEvent>): AuditEvent => ({
  stage: 'ResponseComplete',
  verb: 'get',
  requestURI: '/',
  user: { username: DST },
  ...e,
});

describe('can-i against the audit log', () => {
  it('parses the can-i table', () => {
    expect(
      parseCanIList(
        [
          'Resources                                       Non-Resource URLs   Resource Names                          Verbs',
          'leases.coordination.k8s.io                      []                  [minimesh-destination-endpoint-write]   [get update]',
          'selfsubjectreviews.authentication.k8s.io        []                  []                                      [create]',
          '                                                [/api/*]            []                                      [get]',
          'pods                                            []                  []                                      [list watch]',
        ].join('\n'),
      ),
    ).toEqual([
      'leases.coordination.k8s.io[minimesh-destination-endpoint-write] get',
      'leases.coordination.k8s.io[minimesh-destination-endpoint-write] update',
      'pods list',
      'pods watch',
    ]);
  });

  it("finds a user's allowed requests and the grants none of them used", () => {
    const used = permissionsUsed(
      [
        ev({ verb: 'list', objectRef: { resource: 'pods' } }),
        ev({ verb: 'watch', objectRef: { resource: 'pods' }, stage: 'ResponseStarted' }),
        ev({
          verb: 'update',
          objectRef: {
            resource: 'leases',
            apiGroup: 'coordination.k8s.io',
            name: 'minimesh-destination-endpoint-write',
          },
        }),
        // Another lease's name does not use the name-scoped grant.
        ev({ verb: 'get', objectRef: { resource: 'leases', apiGroup: 'coordination.k8s.io', name: 'other' } }),
        // Refused by RBAC: not a use.
        ev({
          verb: 'delete',
          objectRef: { resource: 'endpointslices', apiGroup: 'discovery.k8s.io' },
          annotations: { 'authorization.k8s.io/decision': 'forbid' },
        }),
        // Someone else's request.
        ev({
          verb: 'create',
          objectRef: { resource: 'endpointslices', apiGroup: 'discovery.k8s.io' },
          user: { username: 'x' },
        }),
        // Non-resource URL.
        ev({ verb: 'get', requestURI: '/version' }),
        // A subresource, named as can-i names it.
        ev({
          verb: 'patch',
          objectRef: {
            resource: 'httproutes',
            apiGroup: 'gateway.networking.k8s.io',
            subresource: 'status',
            name: 'r',
          },
        }),
      ],
      DST,
    );
    expect(used).toHaveLength(5);
    expect(
      unusedPermissions(
        [
          'pods list',
          'pods watch',
          'leases.coordination.k8s.io[minimesh-destination-endpoint-write] update',
          'leases.coordination.k8s.io[minimesh-destination-endpoint-write] get',
          'endpointslices.discovery.k8s.io create',
          'endpointslices.discovery.k8s.io delete',
          'httproutes.gateway.networking.k8s.io/status patch',
          'grpcroutes.gateway.networking.k8s.io/status patch',
        ],
        used,
      ),
    ).toEqual([
      'leases.coordination.k8s.io[minimesh-destination-endpoint-write] get',
      'endpointslices.discovery.k8s.io create',
      'endpointslices.discovery.k8s.io delete',
      'grpcroutes.gateway.networking.k8s.io/status patch',
    ]);
  });
});
