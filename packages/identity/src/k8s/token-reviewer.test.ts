import { beforeAll, describe, expect, it } from 'vitest';
import { fakeTokenReviewApi, type TokenReviewApi } from '../../test/helpers/token-review-api.js';
import { IdentityError } from '../errors.js';
import {
  createKubeTokenReviewer,
  THROTTLED_CACHE_TTL_MS,
  TOKEN_REVIEW_PATH,
  type KubeTokenReviewer,
} from './token-reviewer.js';

const AUD = 'identity.minimesh.io';
let api: TokenReviewApi;
let reviewer: KubeTokenReviewer;

beforeAll(() => {
  api = fakeTokenReviewApi();
  api.tokens.set('good-token', { username: 'system:serviceaccount:default:web', audiences: [AUD] });
  api.tokens.set('other-aud-token', {
    username: 'system:serviceaccount:default:web',
    audiences: ['https://kubernetes.default.svc'],
  });
  reviewer = createKubeTokenReviewer({ client: api.client, audience: AUD, timeoutMs: 2000 });
});

describe('createKubeTokenReviewer (against the in-memory API server)', () => {
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
    api.client.failNext('POST', TOKEN_REVIEW_PATH, 403);
    try {
      await reviewer.review('good-token');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(IdentityError);
      expect((err as IdentityError).code).toBe('MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED');
      expect((err as Error).message).toBe('TokenReview: API server answered HTTP 403 InternalError: injected failure');
      expect(JSON.stringify(err, Object.getOwnPropertyNames(err))).not.toContain('good-token');
    }
  });

  it('while throttled (429), answers from a positive review of the same token not older than the TTL', async () => {
    let t = 1_000_000;
    const r = createKubeTokenReviewer({ client: api.client, audience: AUD, now: () => t });
    expect((await r.review('good-token')).authenticated).toBe(true);
    api.client.failNext('POST', TOKEN_REVIEW_PATH, 429);
    expect(await r.review('good-token')).toEqual({
      authenticated: true,
      username: 'system:serviceaccount:default:web',
    });
    api.client.failNext('POST', TOKEN_REVIEW_PATH, 429);
    await expect(r.review('nobody')).rejects.toThrow('TokenReview: API server answered HTTP 429 TooManyRequests');
    t += THROTTLED_CACHE_TTL_MS;
    api.client.failNext('POST', TOKEN_REVIEW_PATH, 429);
    await expect(r.review('good-token')).rejects.toThrow('HTTP 429');
  });

  it('probes GET /version, and fails the probe when the server fails', async () => {
    await expect(reviewer.probe()).resolves.toBeUndefined();
    api.client.failNext('GET', '/version', 503);
    await expect(reviewer.probe()).rejects.toThrow(/^API server: API server answered HTTP 503/);
  });
});
