// Namespace annotations, which an AdmissionReview does not carry: from an informer's cache (list +
// watch of namespaces), as Linkerd's proxy-injector reads them from its namespace lister. A namespace
// the cache does not hold yet (created a moment before its first pod, or the cache not synced) is read
// with one list of that name (a quorum read, as fresh as a GET, under the informer's own `list` grant).
// Before, every admission made that GET: at 50 pod creations/s the saturated API server
// answered it after the 2 s timeout and more than half the pods were admitted without the mesh
// (docs/scale.md, "Fixes"). An annotation changed on an existing namespace takes effect once the watch
// delivers it (milliseconds; docs/injector.md). RBAC: namespaces list, watch.
import { Informer, InformerStore, keyOfObject, type KubeClient } from '@minimesh/kube';
import type { Logger } from '@minimesh/runtime';
import { InjectorError } from '../errors.js';
import type { StringMap } from '../patch/types.js';

export interface NamespaceLookup {
  /** Annotations of the namespace, or undefined when it does not exist. */
  annotations(name: string): Promise<StringMap | undefined>;
  /** Starts the namespace informer (lookups before its first list are GETs). */
  start(): void;
  /** Whether the cache holds its first list. */
  readonly synced: boolean;
  /** Resolves once the cache holds its first list. */
  waitForSync(): Promise<void>;
  /** Single-namespace reads made so far (a cache miss or an unsynced cache); tests read it. */
  readonly gets: number;
  stop(): Promise<void>;
}

export interface NamespaceLookupOptions {
  client: KubeClient;
  logger: Logger;
  /** Timeout of a single-namespace read (the webhook's own timeout is 10 s; failurePolicy decides past it). */
  timeoutMs?: number;
}

interface NamespaceRecord {
  name: string;
  annotations: StringMap;
}

function toRecord(obj: unknown): NamespaceRecord {
  const m = (obj as { metadata?: { name?: string; annotations?: StringMap } }).metadata;
  return { name: m?.name ?? '', annotations: { ...(m?.annotations ?? {}) } };
}

export function createNamespaceLookup(opts: NamespaceLookupOptions): NamespaceLookup {
  const store = new InformerStore<NamespaceRecord>((r) => r.name);
  const informer = new Informer<NamespaceRecord>({
    client: opts.client,
    resource: 'namespaces',
    path: '/api/v1/namespaces',
    transform: toRecord,
    keyOf: keyOfObject,
    handler: store,
    logger: opts.logger,
  });
  let gets = 0;
  const get = async (name: string): Promise<StringMap | undefined> => {
    gets++;
    try {
      const list = await opts.client.get<{ items?: { metadata?: { name?: string; annotations?: StringMap } }[] }>(
        `/api/v1/namespaces?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`,
        { timeoutMs: opts.timeoutMs ?? 2000 },
      );
      const ns = list?.items?.find((i) => i.metadata?.name === name);
      return ns === undefined ? undefined : { ...(ns.metadata?.annotations ?? {}) };
    } catch (err) {
      throw new InjectorError(
        'MINIMESH_INJECTOR_NAMESPACE_LOOKUP',
        `namespace ${name}: the lookup failed: ${(err as Error).message}`,
        { cause: err },
      );
    }
  };
  return {
    async annotations(name) {
      const cached = informer.synced ? store.get(name) : undefined;
      if (cached) return { ...cached.annotations };
      return await get(name);
    },
    start: () => informer.start(),
    get synced() {
      return informer.synced;
    },
    waitForSync: () => informer.waitForSync(),
    get gets() {
      return gets;
    },
    stop: () => informer.stop(),
  };
}
