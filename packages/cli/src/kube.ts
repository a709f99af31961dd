// Kubernetes access for the commands that read the cluster (explain, check): which kubeconfig,
// and whether it points at this machine's local cluster. client-node loads on first use (~1 s).
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';

/** The local cluster's admin kubeconfig (see @minimesh/local-cluster), used when nothing else is configured. */
export const LOCAL_CLUSTER_KUBECONFIG = join(
  process.env.MINIMESH_CLUSTER_DIR ?? '/tmp/minimesh-cluster',
  'admin.kubeconfig',
);

export class KubeAccessError extends Error {
  readonly code = 'MINIMESH_CLI_KUBE';
}

/** --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the local cluster's admin kubeconfig. */
export function resolveKubeconfigPath(flag: string | undefined): string | undefined {
  if (flag) return flag;
  if (process.env.KUBECONFIG) return process.env.KUBECONFIG;
  const home = join(homedir(), '.kube', 'config');
  if (existsSync(home)) return home;
  if (existsSync(LOCAL_CLUSTER_KUBECONFIG)) return LOCAL_CLUSTER_KUBECONFIG;
  return undefined;
}

export async function loadKubeConfig(
  flag: string | undefined,
): Promise<{ kc: KubeConfig; path: string | undefined; server: string }> {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  const path = resolveKubeconfigPath(flag);
  try {
    if (path) kc.loadFromFile(path);
    else kc.loadFromDefault();
  } catch (err) {
    throw new KubeAccessError(`kubeconfig ${path ?? '(default)'}: ${(err as Error).message}`, { cause: err });
  }
  const server = kc.getCurrentCluster()?.server ?? '';
  if (server === '') throw new KubeAccessError(`kubeconfig ${path ?? '(default)'}: no current cluster`);
  return { kc, path, server };
}

/** A client-node error as one line: HTTP status and the API's message when there is one. */
export function describeKubeError(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  let msg = e.message ?? String(err);
  if (typeof e.body === 'string') {
    try {
      const body = JSON.parse(e.body) as { message?: string };
      if (body.message) msg = body.message;
    } catch {
      // not JSON
    }
  }
  const first = msg.split('\n')[0] ?? msg;
  return typeof e.code === 'number' ? `HTTP ${e.code}: ${first}` : first;
}

export function kubeStatus(err: unknown): number | undefined {
  const c = (err as { code?: unknown }).code;
  return typeof c === 'number' ? c : undefined;
}
