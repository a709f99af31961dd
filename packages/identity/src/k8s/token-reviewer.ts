// TokenReview: asks the API server whether a service-account token is valid for our audience, and whose it is.
import { ApiException, AuthenticationV1Api, KubeConfig, VersionApi } from '@kubernetes/client-node';
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

/** --kubeconfig FILE, or the in-cluster service-account config when absent. */
export function loadKubeConfig(file: string | undefined, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const kc = new KubeConfig();
  if (file) {
    try {
      kc.loadFromFile(file);
    } catch (err) {
      throw new IdentityError(
        'MINIMESH_IDENTITY_KUBECONFIG_INVALID',
        `${file}: cannot load the kubeconfig (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        { cause: err },
      );
    }
    if (!kc.getCurrentCluster())
      throw new IdentityError('MINIMESH_IDENTITY_KUBECONFIG_INVALID', `${file}: the kubeconfig has no current cluster`);
    return kc;
  }
  if (!env.KUBERNETES_SERVICE_HOST) {
    throw new IdentityError(
      'MINIMESH_IDENTITY_KUBECONFIG_INVALID',
      '--kubeconfig: not given, and not running in a cluster (KUBERNETES_SERVICE_HOST is unset)',
    );
  }
  kc.loadFromCluster();
  return kc;
}

// Never let a response body (a TokenReview echoes the token in spec.token) or a header reach a message.
function describeFailure(err: unknown): { text: string; cause: Error } {
  if (err instanceof ApiException) {
    let body = err.body as { reason?: unknown; message?: unknown } | string | undefined;
    if (typeof body === 'string') {
      try {
        body = JSON.parse(body) as { reason?: unknown; message?: unknown };
      } catch {
        body = undefined;
      }
    }
    const reason = body && typeof body === 'object' && typeof body.reason === 'string' ? ` ${body.reason}` : '';
    const message = body && typeof body === 'object' && typeof body.message === 'string' ? `: ${body.message}` : '';
    const text = `API server answered HTTP ${err.code}${reason}${message}`;
    return { text, cause: new Error(text) };
  }
  const e = err as Error;
  const code = (e as { code?: unknown }).code;
  const text = `${typeof code === 'string' ? `${code} ` : ''}${e.message ?? String(err)}`;
  return { text, cause: new Error(text) };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms}ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

export function createKubeTokenReviewer(opts: {
  kubeConfig: KubeConfig;
  audience: string;
  timeoutMs?: number;
}): KubeTokenReviewer {
  const auth = opts.kubeConfig.makeApiClient(AuthenticationV1Api);
  const version = opts.kubeConfig.makeApiClient(VersionApi);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  return {
    async review(token) {
      let res;
      try {
        res = await withTimeout(
          auth.createTokenReview({
            body: {
              apiVersion: 'authentication.k8s.io/v1',
              kind: 'TokenReview',
              spec: { token, audiences: [opts.audience] },
            },
          }),
          timeoutMs,
          'TokenReview',
        );
      } catch (err) {
        const { text, cause } = describeFailure(err);
        throw new IdentityError('MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED', `TokenReview: ${text}`, { cause });
      }
      const status = res.status ?? {};
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
      return { authenticated: true, username };
    },
    async probe() {
      try {
        await withTimeout(version.getCode(), timeoutMs, 'GET /version');
      } catch (err) {
        const { text, cause } = describeFailure(err);
        throw new IdentityError('MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED', `API server: ${text}`, { cause });
      }
    },
  };
}
