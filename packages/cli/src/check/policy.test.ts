// `minimesh check`'s policy part from fetched objects.
import { policyCrds, TEST_CLUSTER } from '@minimesh/policy';
import { describe, expect, it } from 'vitest';
import { checkPolicy, type CrdLike } from './policy.js';

const established = (c: ReturnType<typeof policyCrds>[number]): CrdLike => ({
  metadata: c.metadata,
  spec: c.spec as CrdLike['spec'],
  status: { conditions: [{ type: 'Established', status: 'True' }] },
});
const pod = (name: string, labels: Record<string, string>) => ({
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels },
  spec: { containers: [{ name: 'app', ports: [{ name: 'http', containerPort: 8080 }] }] },
});
const dst = {
  metadata: { name: 'minimesh-destination-1' },
  status: { containerStatuses: [{ name: 'policy', ready: true }] },
};

describe('minimesh check: policy', () => {
  it('all well', () => {
    const r = checkPolicy({
      crds: policyCrds().map(established),
      destinationPods: [dst],
      ready: new Map([['minimesh-destination-1', { ok: true }]]),
      objects: { Pod: [pod('web-1', { app: 'web' })] },
      cluster: TEST_CLUSTER,
    });
    expect(r.map((x) => `${x.status} ${x.description}`)).toEqual([
      'ok CRD servers.policy.minimesh.io is installed',
      'ok CRD authorizationpolicies.policy.minimesh.io is installed',
      'ok CRD meshtlsauthentications.policy.minimesh.io is installed',
      'ok CRD networkauthentications.policy.minimesh.io is installed',
      'ok CRD httproutes.policy.minimesh.io is installed',
      'ok CRD httplocalratelimitpolicies.policy.minimesh.io is installed',
      'ok CRD egressnetworks.policy.minimesh.io is installed',
      'ok policy controller in minimesh-destination-1 is ready',
      'ok policy resources are well-formed',
      'ok policy resources are consistent',
    ]);
  });

  it('reports missing CRDs, a controller that is not ready, malformed and inconsistent resources', () => {
    const r = checkPolicy({
      crds: policyCrds().slice(1).map(established),
      destinationPods: [
        { metadata: { name: 'd' }, status: { containerStatuses: [{ name: 'policy', ready: false, restartCount: 3 }] } },
      ],
      ready: new Map(),
      objects: {
        Pod: [pod('web-1', { app: 'web' })],
        Server: [
          {
            kind: 'Server',
            metadata: { name: 'a', namespace: 'shop', creationTimestamp: '2026-01-01T00:00:00Z' },
            spec: { podSelector: { matchLabels: { app: 'web' } }, port: 8080 },
          },
          {
            kind: 'Server',
            metadata: { name: 'b', namespace: 'shop', creationTimestamp: '2026-01-02T00:00:00Z' },
            spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http' },
          },
          {
            kind: 'Server',
            metadata: { name: 'lonely', namespace: 'shop' },
            spec: { podSelector: { matchLabels: { app: 'none' } }, port: 80 },
          },
          { kind: 'Server', metadata: { name: 'bad', namespace: 'shop' }, spec: { port: 80 } },
        ],
        AuthorizationPolicy: [
          {
            kind: 'AuthorizationPolicy',
            metadata: { name: 'p', namespace: 'shop' },
            spec: {
              targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'gone' },
              requiredAuthenticationRefs: [],
            },
          },
        ],
      },
      cluster: TEST_CLUSTER,
    });
    const byDesc = Object.fromEntries(r.map((x) => [x.description, x]));
    expect(byDesc['CRD servers.policy.minimesh.io is installed']?.status).toBe('fail');
    expect(byDesc['policy controller in d is ready']).toMatchObject({
      status: 'fail',
      detail: 'container not ready (3 restarts)',
    });
    expect(byDesc['policy resources are well-formed']).toMatchObject({ status: 'warn' });
    expect(byDesc['policy resources are well-formed']?.detail).toMatch(
      /^Server shop\/bad: spec: expected exactly one of podSelector/,
    );
    expect(byDesc['policy resources are consistent']?.detail?.split('; ')).toEqual([
      'AuthorizationPolicy shop/p: its target Server gone does not exist (it admits nobody to anything)',
      'Server shop/b and a both select port 8080 of pod web-1: a (the older) wins',
      'Server shop/lonely selects no pod',
    ]);
  });
});
