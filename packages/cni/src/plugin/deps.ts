// The plugin's I/O, replaceable in tests: reading the pod (one GET with the installer's kubeconfig),
// running commands in the pod's network namespace, finding binaries.
import { MINIMESH_VERSION } from '@minimesh/config';
import { createKubeClient, KubeApiError, loadKubeConfig } from '@minimesh/kube';
import { createCommandRunner, findInPath, type CommandRunner } from '@minimesh/proxy-init';
import type { Logger } from '@minimesh/runtime';
import { CniError } from '../errors.js';
import type { PodLike } from './pod-decision.js';
import type { NetConf } from './spec.js';

export interface PluginDeps {
  readPod(conf: NetConf, namespace: string, name: string): Promise<PodLike>;
  /** Runs commands inside the network namespace at this path (nsenter --net). */
  runner(netns: string): CommandRunner;
  lookup(name: string): string | undefined;
  logger: Logger;
  now(): Date;
}

/** How long ADD waits for the API server: the runtime waits for us, and the kubelet retries. */
export const API_TIMEOUT_MS = 10_000;

export async function readPodFromApi(conf: NetConf, namespace: string, name: string): Promise<PodLike> {
  const what = `reading pod ${namespace}/${name}`;
  let kubeconfig;
  try {
    kubeconfig = await loadKubeConfig({ path: conf.kubeconfig });
  } catch (err) {
    throw new CniError(
      'MINIMESH_CNI_API',
      `${what}: ${(err as Error).message}: the minimesh-cni installer writes that file; is its DaemonSet running on this node?`,
      { cause: err },
    );
  }
  const client = createKubeClient(kubeconfig, { userAgent: `minimesh-cni/${MINIMESH_VERSION}`, http1Only: true });
  try {
    return await client.requestOk<PodLike>(
      'GET',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`,
      undefined,
      { timeoutMs: API_TIMEOUT_MS },
    );
  } catch (err) {
    const detail =
      err instanceof KubeApiError
        ? err.statusCode === 0
          ? `cannot reach the API server at ${kubeconfig.server}: ${err.detail}`
          : `the API server at ${kubeconfig.server} answered ${err.statusCode}: ${err.detail}`
        : (err as Error).message;
    throw new CniError('MINIMESH_CNI_API', `${what}: ${detail}`, { cause: err });
  } finally {
    await client.close();
  }
}

export function defaultDeps(logger: Logger): PluginDeps {
  return {
    readPod: readPodFromApi,
    runner: (netns) => createCommandRunner({ netns, timeoutMs: 20_000 }),
    lookup: (name) => findInPath(name),
    logger,
    now: () => new Date(),
  };
}
