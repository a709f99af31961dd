import { describe, expect, it } from 'vitest';
import { cacheReadiness, type SyncedCache } from './cache-readiness.js';

function cache(): SyncedCache & { sync(): void } {
  let resolve: () => void = () => undefined;
  const done = new Promise<void>((r) => (resolve = r));
  const c = {
    synced: false,
    waitForSync: () => done,
    sync() {
      c.synced = true;
      resolve();
    },
  };
  return c;
}

describe('cacheReadiness', () => {
  it('is ready once every cache has synced, naming the ones it waits for', async () => {
    const pods = cache();
    const services = cache();
    const r = cacheReadiness({ pods, services });
    expect(r.ready()).toBe(false);
    expect(r.readiness()).toBe('waiting for caches: pods, services');
    let synced = false;
    void r.synced().then(() => (synced = true));
    pods.sync();
    expect(r.readiness()).toBe('waiting for caches: services');
    await Promise.resolve();
    expect(synced).toBe(false);
    services.sync();
    await r.synced();
    expect(synced).toBe(true);
    expect(r.ready()).toBe(true);
    expect(r.readiness()).toBe(true);
  });
});
