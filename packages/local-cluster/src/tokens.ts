// Service-account tokens from the TokenRequest API, and kubeconfigs that use them, so a component can
// run against the local cluster with exactly the RBAC its ServiceAccount has.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminClient } from './cluster.js';
import { KubeApiError, renderKubeconfig } from './kube-client.js';
import { stateDir, statePaths } from './paths.js';

export interface ServiceAccountRef {
  namespace: string;
  serviceAccount: string;
}

export interface TokenOptions extends ServiceAccountRef {
  /** Token audiences (default: the API server's, so the token authenticates to the API). */
  audiences?: string[];
  /** Default 24 h (the API server's minimum is 10 min). */
  expirationSeconds?: number;
}

async function ensureNamespaceAndServiceAccount(ref: ServiceAccountRef): Promise<void> {
  const admin = adminClient();
  const create = async (path: string, body: unknown) => {
    try {
      await admin.request('POST', path, body);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err;
    }
  };
  if (!(await admin.get(`/api/v1/namespaces/${ref.namespace}`))) {
    await create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ref.namespace } });
  }
  if (!(await admin.get(`/api/v1/namespaces/${ref.namespace}/serviceaccounts/${ref.serviceAccount}`))) {
    await create(`/api/v1/namespaces/${ref.namespace}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: ref.serviceAccount, namespace: ref.namespace },
    });
  }
}

/** A token for `system:serviceaccount:<namespace>:<serviceAccount>` (the namespace and SA are created if missing). */
export async function createServiceAccountToken(opts: TokenOptions): Promise<string> {
  await ensureNamespaceAndServiceAccount(opts);
  const res = await adminClient().request(
    'POST',
    `/api/v1/namespaces/${opts.namespace}/serviceaccounts/${opts.serviceAccount}/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        ...(opts.audiences ? { audiences: opts.audiences } : {}),
        expirationSeconds: opts.expirationSeconds ?? 86_400,
      },
    },
  );
  return String(res.status.token);
}

/** Writes a kubeconfig whose user is the ServiceAccount's token; returns its path. */
export async function kubeconfigForServiceAccount(
  opts: ServiceAccountRef & { expirationSeconds?: number },
): Promise<string> {
  const token = await createServiceAccountToken({ ...opts, expirationSeconds: opts.expirationSeconds ?? 86_400 });
  const p = statePaths(stateDir());
  mkdirSync(p.tokens, { recursive: true, mode: 0o700 });
  const file = join(p.tokens, `${opts.namespace}.${opts.serviceAccount}.kubeconfig`);
  writeFileSync(
    file,
    renderKubeconfig({
      name: `${opts.namespace}-${opts.serviceAccount}`,
      caPem: readFileSync(p.caCert, 'utf8'),
      token,
      namespace: opts.namespace,
    }),
    { mode: 0o600 },
  );
  return file;
}
