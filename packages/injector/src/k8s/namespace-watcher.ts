// Namespace annotations, which an AdmissionReview does not carry: a list+watch (client-node's
// informer) keeps them in memory; a cache miss (a namespace created a moment ago) falls back to a GET.
// The informer restarts with backoff after an error and re-lists, so every restart is a reset.
import type { KubeConfig, V1Namespace } from '@kubernetes/client-node';
import type { Logger } from '@minimesh/runtime';
import { InjectorError } from '../errors.js';
import type { StringMap } from '../patch/types.js';

export interface NamespaceWatcher {
  /** Annotations of the namespace, or undefined when it does not exist. */
  annotations(name: string): Promise<StringMap | undefined>;
  /** True once the first list completed and the watch is open. */
  synced(): boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface NamespaceWatcherOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  /** First restart delay after an error; doubles up to 30 s. */
  restartDelayMs?: number;
  /** Timeout of the fallback GET on a cache miss. */
  lookupTimeoutMs?: number;
}

export async function createNamespaceWatcher(opts: NamespaceWatcherOptions): Promise<NamespaceWatcher> {
  // Loaded here, not at the top: the package index is also imported by the CLI, which never watches.
  const { CoreV1Api, makeInformer } = await import('@kubernetes/client-node');
  const log = opts.logger;
  const core = opts.kubeConfig.makeApiClient(CoreV1Api);
  const informer = makeInformer<V1Namespace>(opts.kubeConfig, '/api/v1/namespaces', () => core.listNamespace());
  let isSynced = false;
  let stopped = false;
  let delay = opts.restartDelayMs ?? 500;
  let timer: NodeJS.Timeout | undefined;

  informer.on('error', (err: unknown) => {
    isSynced = false;
    if (stopped) return;
    log.warn({ err: (err as Error)?.message ?? String(err), retryInMs: delay }, 'namespace watch failed; restarting');
    timer = setTimeout(() => void begin(), delay);
    delay = Math.min(delay * 2, 30_000);
  });

  async function begin(): Promise<void> {
    if (stopped) return;
    try {
      await informer.start();
      isSynced = true;
      delay = opts.restartDelayMs ?? 500;
      log.info({ namespaces: informer.list().length }, 'namespace cache synced');
    } catch (err) {
      // start() reports list failures through the error callback as well; log here only.
      log.debug({ err: (err as Error).message }, 'namespace watch start failed');
    }
  }

  return {
    synced: () => isSynced,
    start: begin,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await informer.stop();
    },
    async annotations(name) {
      const cached = informer.get(name);
      if (cached) return (cached.metadata?.annotations ?? {}) as StringMap;
      try {
        const ns = await withTimeout(core.readNamespace({ name }), opts.lookupTimeoutMs ?? 2000);
        return (ns.metadata?.annotations ?? {}) as StringMap;
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (code === 404) return undefined;
        throw new InjectorError(
          'MINIMESH_INJECTOR_NAMESPACE_LOOKUP',
          `namespace ${name}: not in the cache and the lookup failed: ${(err as Error).message}`,
          { cause: err },
        );
      }
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
