// Kubernetes access for the commands that read the cluster (explain, check): the shared loader and
// client of @minimesh/kube, with the local cluster's admin kubeconfig as the last fallback.
import { join } from 'node:path';
import { MINIMESH_VERSION } from '@minimesh/config';
import { createKubeClient, KubeApiError, loadKubeConfig, type KubeClient } from '@minimesh/kube';

/** The local cluster's admin kubeconfig (see @minimesh/local-cluster), used when nothing else is configured. */
export const LOCAL_CLUSTER_KUBECONFIG = join(
  process.env.MINIMESH_CLUSTER_DIR ?? '/tmp/minimesh-cluster',
  'admin.kubeconfig',
);
export const LOCAL_CLUSTER_SERVER = 'https://127.0.0.1:6443';

/**
 * --kubeconfig, else $KUBECONFIG, else the in-cluster service account, else ~/.kube/config, else the
 * local cluster's admin kubeconfig. Throws KubeConfigError (one line) when none is there.
 */
export async function connectKube(
  flag: string | undefined,
  context?: string,
): Promise<{ client: KubeClient; server: string }> {
  const config = await loadKubeConfig({
    path: flag,
    fallbacks: [LOCAL_CLUSTER_KUBECONFIG],
    ...(context ? { context } : {}),
  });
  return {
    client: createKubeClient(config, { userAgent: `minimesh-cli/${MINIMESH_VERSION}` }),
    server: config.server,
  };
}

/** The flags of every command that reads the cluster, with kubectl's names. */
export const clusterFlags = {
  kubeconfig: {
    type: 'string',
    default: '',
    description: 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the local cluster)',
  },
  context: { type: 'string', default: '', description: 'the kubeconfig context to use (default: its current-context)' },
} as const;

/** True when the kubeconfig's API server is the local cluster on this machine (its pods are network namespaces here). */
export function isLocalCluster(server: string): boolean {
  return (
    server.replace(/\/$/, '') === LOCAL_CLUSTER_SERVER && typeof process.getuid === 'function' && process.getuid() === 0
  );
}

/** An API error as one line: HTTP status and the API's message when there is one. */
export function describeKubeError(err: unknown): string {
  if (err instanceof KubeApiError) return err.statusCode === 0 ? err.detail : `HTTP ${err.statusCode}: ${err.detail}`;
  const msg = (err as Error).message ?? String(err);
  return msg.split('\n')[0] ?? msg;
}

export function kubeStatus(err: unknown): number | undefined {
  return err instanceof KubeApiError && err.statusCode !== 0 ? err.statusCode : undefined;
}
