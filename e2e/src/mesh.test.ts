import { describe, expect, it } from 'vitest';
import type { Driver } from '../drivers/types.js';
import { applyObjects, containerProblems, crdsNotDeleting, crdsServed, stuckMessage, type Pod } from './mesh.js';

describe('a rollout that cannot start', () => {
  const pod: Pod = {
    metadata: { name: 'server-1', namespace: 'shop', uid: 'u' },
    spec: { containers: [{ name: 'http', image: 'minimesh.test/http-echo:e2e' }] },
    status: {
      containerStatuses: [
        {
          name: 'http',
          ready: false,
          state: {
            waiting: {
              reason: 'ErrImageNeverPull',
              message: 'Container image "minimesh.test/http-echo:e2e" is not present with pull policy of Never',
            },
          },
        } as never,
      ],
    },
  };
  it('names the container, the reason and the image, and the command that builds the images', () => {
    const problems = containerProblems([pod]);
    expect(problems).toEqual([
      'server-1/http: ErrImageNeverPull: Container image "minimesh.test/http-echo:e2e" is not present with pull policy of Never',
    ]);
    expect(stuckMessage('shop', 'server', problems)).toBe(
      `shop/server: containers cannot start:\n  ${problems[0]}\n  an image is not built: run bash scripts/images.sh build (docs/local-cluster.md)`,
    );
  });
  it('adds no build hint for other reasons', () => {
    expect(
      stuckMessage('shop', 'server', ['server-1/http: CreateContainerConfigError: secret "x" not found']),
    ).not.toContain('images.sh');
  });
});

describe('CRDs before their objects', () => {
  type Crd = { metadata: { name: string; deletionTimestamp?: string }; spec: { group: string }; status?: unknown };
  const crd = (name: string, established: boolean, deleting = false): Crd => ({
    metadata: { name, ...(deleting ? { deletionTimestamp: '2026-11-28T14:00:00Z' } : {}) },
    spec: { group: name.slice(name.indexOf('.') + 1) },
    status: { conditions: [{ type: 'Established', status: established ? 'True' : 'False' }] },
  });
  /** A driver whose kubectl answers `get crd` from `crds()` and `api-resources` from `served()`. */
  const fake = (crds: () => Crd[], served: () => string[], apply = ''): Driver =>
    ({
      name: 'local',
      kubectl: async (args: readonly string[]) => {
        if (args[0] === 'get') return { code: 0, stdout: JSON.stringify({ items: crds() }), stderr: '' };
        if (args[0] === 'api-resources') return { code: 0, stdout: `${served().join('\n')}\n`, stderr: '' };
        return { code: 1, stdout: '', stderr: apply };
      },
    }) as unknown as Driver;
  const name = 'authorizationpolicies.policy.minimesh.io';

  it('waits until the CRD is Established and in discovery', async () => {
    let calls = 0;
    const d = fake(
      () => [crd(name, ++calls > 2)],
      () => (calls > 3 ? [name] : []),
    );
    await crdsServed(d, [name], 10_000);
    expect(calls).toBeGreaterThan(3);
  });
  it('says which CRD is absent or being deleted when it never serves', async () => {
    const d = fake(
      () => [crd(name, true, true)],
      () => [],
    );
    await expect(crdsServed(d, [name, 'servers.policy.minimesh.io'], 600)).rejects.toThrow(
      /not served after 0.6 s:\n {2}authorizationpolicies\.policy\.minimesh\.io: Established=True, being deleted since 2026-11-28T14:00:00Z\n {2}servers\.policy\.minimesh\.io: absent/,
    );
  });
  it('waits while a CRD is being deleted, not while it is absent', async () => {
    let calls = 0;
    await crdsNotDeleting(
      fake(
        () => (++calls < 3 ? [crd(name, true, true)] : []),
        () => [],
      ),
      [name],
      10_000,
    );
    expect(calls).toBe(3);
  });
  it('an apply refused for an unknown kind names the state of its group’s CRDs', async () => {
    const d = fake(
      () => [crd(name, true, true)],
      () => [],
      'error: resource mapping not found for name: "a" namespace: "b" from "STDIN": no matches for kind "AuthorizationPolicy" in version "policy.minimesh.io/v1alpha1"',
    );
    await expect(applyObjects(d, [])).rejects.toThrow(
      /the CRDs of policy\.minimesh\.io now: \n {2}authorizationpolicies\.policy\.minimesh\.io: Established=True, being deleted since/,
    );
  });
});
