// TokenReview: asks the API server whether a service-account token is valid for our audience, and whose it is.
// Every review goes through the program's one Kubernetes client (@minimesh/kube): one reused HTTP/2
// connection to the API server instead of a TLS handshake per Certify.
import { createHash } from 'node:crypto';
import { KubeApiError, statusMessage, statusReason, type KubeClient } from '@minimesh/kube';
import { IdentityError } from '../errors.js';

export type TokenReviewResult = { authenticated: true; username: string } | { authenticated: false; reason: string };

/** The one thing Certify needs from Kubernetes. Tests and the benchmark inject their own. */
export interface TokenReviewer {
  review(token: string): Promise<TokenReviewResult>;
}

export interface KubeTokenReviewer extends TokenReviewer {
  /** Resolves when the API server answers GET /version; rejects with MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED otherwise. */
  probe(): Promise<void>;
}

export const TOKEN_REVIEW_PATH = '/apis/authentication.k8s.io/v1/tokenreviews';

/**
 * How long a positive review may stand in when the API server throttles us (429): the API server's
 * own cache of webhook token reviews keeps them as long (--authentication-token-webhook-cache-ttl).
 */
export const THROTTLED_CACHE_TTL_MS = 120_000;
const THROTTLED_CACHE_MAX = 10_000;

interface TokenReviewBody {
  status?: { authenticated?: boolean; error?: string; audiences?: string[]; user?: { username?: string } };
}

// Never let a response body (a TokenReview echoes the token in spec.token) or a header reach a message.
function describeStatus(status: number, body: unknown): string {
  const reason = statusReason(body);
  const message = statusMessage(body);
  return `API server answered HTTP ${status}${reason ? ` ${reason}` : ''}${message ? `: ${message}` : ''}`;
}

function describeTransport(err: unknown): string {
  return err instanceof KubeApiError ? err.detail : (err as Error).message;
}

export function createKubeTokenReviewer(opts: {
  client: KubeClient;
  audience: string;
  timeoutMs?: number;
  now?: () => number;
}): KubeTokenReviewer {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const now = opts.now ?? Date.now;
  // sha256(token) → the last positive answer, used only while the API server answers 429.
  const recent = new Map<string, { username: string; at: number }>();
  const remember = (key: string, username: string): void => {
    recent.delete(key);
    recent.set(key, { username, at: now() });
    if (recent.size > THROTTLED_CACHE_MAX) recent.delete(recent.keys().next().value as string);
  };

  return {
    async review(token) {
      const key = createHash('sha256').update(token).digest('base64');
      let res;
      try {
        res = await opts.client.request<TokenReviewBody>(
          'POST',
          TOKEN_REVIEW_PATH,
          { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences: [opts.audience] } },
          { timeoutMs },
        );
      } catch (err) {
        const text = describeTransport(err);
        throw new IdentityError('MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED', `TokenReview: ${text}`, {
          cause: new Error(text),
        });
      }
      if (res.status === 429) {
        const hit = recent.get(key);
        if (hit && now() - hit.at < THROTTLED_CACHE_TTL_MS) return { authenticated: true, username: hit.username };
      }
      if (res.status < 200 || res.status > 299) {
        const text = describeStatus(res.status, res.body);
        throw new IdentityError('MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED', `TokenReview: ${text}`, {
          cause: new Error(text),
        });
      }
      const status = res.body?.status ?? {};
      if (!status.authenticated) {
        return {
          authenticated: false,
          reason: status.error ? status.error : 'the API server did not authenticate the token',
        };
      }
      // The API server echoes the audiences it validated; insist that ours is among them.
      if (!(status.audiences ?? []).includes(opts.audience)) {
        return { authenticated: false, reason: `token is not valid for audience ${opts.audience}` };
      }
      const username = status.user?.username;
      if (!username) return { authenticated: false, reason: 'TokenReview returned no username' };
      remember(key, username);
      return { authenticated: true, username };
    },
    async probe() {
      let res;
      try {
        res = await opts.client.request('GET', '/version', undefined, { timeoutMs });
      } catch (err) {
        const text = describeTransport(err);
        throw new IdentityError('MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED', `API server: ${text}`, {
          cause: new Error(text),
        });
      }
      if (res.status !== 200) {
        const text = describeStatus(res.status, res.body);
        throw new IdentityError('MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED', `API server: ${text}`, {
          cause: new Error(text),
        });
      }
    },
  };
}
