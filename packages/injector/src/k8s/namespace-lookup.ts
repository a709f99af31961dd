// Namespace annotations, which an AdmissionReview does not carry: one GET per admission. Not an
// informer: a cache is stale exactly when it matters (a namespace annotated or created a moment before
// its first pod), and an admission is rare next to the GET's cost (one request on the kept-alive
// connection, about a millisecond). The GET is a quorum read, so the webhook sees what the user wrote;
// RBAC needs only `namespaces get` (docs/injector.md).
import type { KubeClient } from '@minimesh/kube';
import { InjectorError } from '../errors.js';
import type { StringMap } from '../patch/types.js';

export interface NamespaceLookup {
  /** Annotations of the namespace, or undefined when it does not exist. */
  annotations(name: string): Promise<StringMap | undefined>;
}

export interface NamespaceLookupOptions {
  client: KubeClient;
  /** Timeout of the GET (the webhook's own timeout is 10 s; failurePolicy decides past it). */
  timeoutMs?: number;
}

export function createNamespaceLookup(opts: NamespaceLookupOptions): NamespaceLookup {
  return {
    async annotations(name) {
      try {
        const ns = await opts.client.get<{ metadata?: { annotations?: StringMap } }>(
          `/api/v1/namespaces/${encodeURIComponent(name)}`,
          { timeoutMs: opts.timeoutMs ?? 2000 },
        );
        return ns === undefined ? undefined : { ...(ns.metadata?.annotations ?? {}) };
      } catch (err) {
        throw new InjectorError(
          'MINIMESH_INJECTOR_NAMESPACE_LOOKUP',
          `namespace ${name}: the lookup failed: ${(err as Error).message}`,
          { cause: err },
        );
      }
    },
  };
}
