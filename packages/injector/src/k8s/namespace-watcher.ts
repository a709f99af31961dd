// Namespace annotations, which an AdmissionReview does not carry: the shared informer (@minimesh/kube)
// keeps them in memory (list, then watch; a restart relists, so every restart is a reset); a cache
// miss (a namespace created a moment ago) falls back to a GET.
import { Informer, InformerStore, type KubeClient } from '@minimesh/kube';
import type { Logger } from '@minimesh/runtime';
import { InjectorError } from '../errors.js';
import type { StringMap } from '../patch/types.js';

export interface NamespaceWatcher {
  /** Annotations of the namespace, or undefined when it does not exist. */
  annotations(name: string): Promise<StringMap | undefined>;
  /** True once the first list completed. */
  synced(): boolean;
  /** Starts the list+watch; resolves once the first list is in. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface NamespaceWatcherOptions {
  client: KubeClient;
  logger: Logger;
  /** First restart delay after an error; doubles up to 30 s. */
  restartDelayMs?: number;
  /** Timeout of the fallback GET on a cache miss. */
  lookupTimeoutMs?: number;
}

interface NamespaceRecord {
  name: string;
  annotations: StringMap;
}

function toRecord(o: unknown): NamespaceRecord {
  const meta = (o as { metadata?: { name?: string; annotations?: StringMap } }).metadata ?? {};
  return { name: meta.name ?? '', annotations: { ...(meta.annotations ?? {}) } };
}

export function createNamespaceWatcher(opts: NamespaceWatcherOptions): NamespaceWatcher {
  const store = new InformerStore<NamespaceRecord>((r) => r.name);
  const informer = new Informer<NamespaceRecord>({
    client: opts.client,
    resource: 'namespaces',
    path: '/api/v1/namespaces',
    transform: toRecord,
    keyOf: (o) => toRecord(o).name,
    handler: store,
    logger: opts.logger,
    backoff: { initialMs: opts.restartDelayMs ?? 500, maxMs: 30_000 },
  });
  return {
    synced: () => informer.synced,
    async start() {
      informer.start();
      await informer.waitForSync();
    },
    stop: () => informer.stop(),
    async annotations(name) {
      const cached = store.get(name);
      if (cached) return cached.annotations;
      try {
        const ns = await opts.client.get(`/api/v1/namespaces/${encodeURIComponent(name)}`, {
          timeoutMs: opts.lookupTimeoutMs ?? 2000,
        });
        return ns === undefined ? undefined : toRecord(ns).annotations;
      } catch (err) {
        throw new InjectorError(
          'MINIMESH_INJECTOR_NAMESPACE_LOOKUP',
          `namespace ${name}: not in the cache and the lookup failed: ${(err as Error).message}`,
          { cause: err },
        );
      }
    },
  };
}
