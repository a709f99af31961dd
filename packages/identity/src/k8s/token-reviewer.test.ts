import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeApiServer, type FakeApiServer } from '../../test/helpers/fake-apiserver.js';
import { IdentityError } from '../errors.js';
import { createKubeTokenReviewer, loadKubeConfig, type KubeTokenReviewer } from './token-reviewer.js';

const AUD = 'identity.minimesh.io';
let api: FakeApiServer;
let reviewer: KubeTokenReviewer;

beforeAll(async () => {
  api = await startFakeApiServer();
  api.tokens.set('good-token', { username: 'system:serviceaccount:default:web', audiences: [AUD] });
  api.tokens.set('other-aud-token', {
    username: 'system:serviceaccount:default:web',
    audiences: ['https://kubernetes.default.svc'],
  });
  reviewer = createKubeTokenReviewer({
    kubeConfig: loadKubeConfig(await api.kubeconfig()),
    audience: AUD,
    timeoutMs: 2000,
  });
});
afterAll(() => api.close());

describe('createKubeTokenReviewer (against a stand-in API server)', () => {
  it('sends the token with our audience and returns the user', async () => {
    expect(await reviewer.review('good-token')).toEqual({
      authenticated: true,
      username: 'system:serviceaccount:default:web',
    });
    expect(api.reviews.at(-1)).toEqual({ token: 'good-token', audiences: [AUD] });
  });

  it('reports a token minted for another audience as not authenticated, with the reason', async () => {
    const r = await reviewer.review('other-aud-token');
    expect(r.authenticated).toBe(false);
    expect(r.authenticated === false && r.reason).toContain('is invalid for the target audiences');
  });

  it('reports an unknown token as not authenticated', async () => {
    expect(await reviewer.review('nobody')).toEqual({ authenticated: false, reason: 'invalid bearer token' });
  });

  it('turns an API error into MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED without the token in the message', async () => {
    api.failWith = 403;
    try {
      await reviewer.review('good-token');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(IdentityError);
      expect((err as IdentityError).code).toBe('MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED');
      expect((err as Error).message).toBe(
        'TokenReview: API server answered HTTP 403 Forbidden: the fake API server was told to fail',
      );
      expect(JSON.stringify(err, Object.getOwnPropertyNames(err))).not.toContain('good-token');
    } finally {
      api.failWith = undefined;
    }
  });

  it('probes GET /version, and fails the probe when the server is gone', async () => {
    await expect(reviewer.probe()).resolves.toBeUndefined();
    const gone = createKubeTokenReviewer({
      kubeConfig: loadKubeConfig(await api.kubeconfig()),
      audience: AUD,
      timeoutMs: 500,
    });
    api.failWith = 503;
    await expect(gone.probe()).rejects.toThrow(/^API server: API server answered HTTP 503/);
    api.failWith = undefined;
  });
});
