// The TokenReview API on the in-memory API server of @minimesh/kube/testing, for unit tests of the
// reviewer. The integration test (test/certify.test.ts) uses the real API server.
import { createFakeKubeClient, type FakeKubeClient } from '@minimesh/kube/testing';
import { TOKEN_REVIEW_PATH } from '../../src/k8s/token-reviewer.js';

export interface FakeToken {
  username: string;
  audiences: string[];
}

export interface TokenReviewApi {
  client: FakeKubeClient;
  /** token → who it belongs to and which audiences it was minted for. */
  tokens: Map<string, FakeToken>;
  /** Every TokenReview body received. */
  reviews: { token: string; audiences: string[] }[];
}

export function fakeTokenReviewApi(): TokenReviewApi {
  const client = createFakeKubeClient();
  const tokens = new Map<string, FakeToken>();
  const reviews: TokenReviewApi['reviews'] = [];
  client.handle('GET', '/version', () => ({
    status: 200,
    body: { major: '1', minor: '33', gitVersion: 'v1.33.0-fake' },
  }));
  client.handle('POST', TOKEN_REVIEW_PATH, (req) => {
    const review = req.body as { spec: { token: string; audiences?: string[] } };
    const wanted = review.spec.audiences ?? [];
    reviews.push({ token: review.spec.token, audiences: wanted });
    const known = tokens.get(review.spec.token);
    const common = known ? wanted.filter((a) => known.audiences.includes(a)) : [];
    const status = !known
      ? { authenticated: false, error: 'invalid bearer token' }
      : common.length === 0
        ? {
            authenticated: false,
            error: `token audiences ${JSON.stringify(known.audiences)} is invalid for the target audiences ${JSON.stringify(wanted)}`,
          }
        : {
            authenticated: true,
            audiences: common,
            user: { username: known.username, groups: ['system:serviceaccounts', 'system:authenticated'] },
          };
    return {
      status: 201,
      body: { kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', metadata: {}, spec: review.spec, status },
    };
  });
  return { client, tokens, reviews };
}
