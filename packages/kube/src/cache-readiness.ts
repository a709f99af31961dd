// Readiness on informer caches, as Linkerd's controllers report it: a program that answers from its
// caches is ready only once every informer has listed its resource. destination and policy both
// serve /ready (and destination its gRPC health) from this.

/** What readiness needs of an informer (Informer has it). */
export interface SyncedCache {
  readonly synced: boolean;
  waitForSync(): Promise<void>;
}

export interface CacheReadiness {
  /** True once every cache has listed its resource. */
  ready(): boolean;
  /** Resolves once every cache has listed its resource. */
  synced(): Promise<void>;
  /** The admin server's /ready answer: true, or "waiting for caches: <names>". */
  readiness(): true | string;
}

/** Readiness over named caches (the names appear in /ready while they wait). */
export function cacheReadiness(caches: Readonly<Record<string, SyncedCache>>): CacheReadiness {
  const all = Object.values(caches);
  const ready = (): boolean => all.every((c) => c.synced);
  return {
    ready,
    async synced() {
      await Promise.all(all.map((c) => c.waitForSync()));
    },
    readiness: () =>
      ready() ||
      `waiting for caches: ${Object.entries(caches)
        .filter(([, c]) => !c.synced)
        .map(([name]) => name)
        .join(', ')}`,
  };
}
