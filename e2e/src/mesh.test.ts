import { describe, expect, it } from 'vitest';
import { containerProblems, stuckMessage, type Pod } from './mesh.js';

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
