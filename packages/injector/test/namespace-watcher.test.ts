// The namespace cache against the real API server: the first list, watch updates, a cache miss served
// by a GET, and a namespace that does not exist.
import { createKubeClient, loadKubeConfig, type KubeClient } from '@minimesh/kube';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminClient, ensureCluster } from '@minimesh/local-cluster';
import { createLogger } from '@minimesh/runtime';
import { createNamespaceWatcher, type NamespaceWatcher } from '../src/index.js';

const suffix = Math.random().toString(16).slice(2, 8);
const early = `mm-inj-nsw-a-${suffix}`;
const late = `mm-inj-nsw-b-${suffix}`;
const silent = createLogger({
  name: 'test',
  level: 'silent',
  destination: new Writable({ write: (_c, _e, cb) => cb() }),
});
let watcher: NamespaceWatcher;
let kube: KubeClient;

async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not true after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  const info = await ensureCluster();
  await adminClient().request('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: early, annotations: { 'minimesh.io/inject': 'enabled' } },
  });
  kube = createKubeClient(await loadKubeConfig({ path: info.kubeconfigPath }), { userAgent: 'minimesh-injector/test' });
  watcher = createNamespaceWatcher({ client: kube, logger: silent });
  await watcher.start();
});

afterAll(async () => {
  await watcher?.stop();
  await kube?.close();
  for (const ns of [early, late])
    await adminClient()
      .request('DELETE', `/api/v1/namespaces/${ns}`)
      .catch(() => undefined);
});

describe('namespace watcher', () => {
  it('is synced after start and knows the namespaces that existed', async () => {
    expect(watcher.synced()).toBe(true);
    expect(await watcher.annotations(early)).toEqual({ 'minimesh.io/inject': 'enabled' });
  });

  it('follows annotation changes through the watch', async () => {
    await adminClient().request(
      'PATCH',
      `/api/v1/namespaces/${early}`,
      { metadata: { annotations: { 'minimesh.io/inject': 'disabled' } } },
      'application/merge-patch+json',
    );
    const seen = await eventually(
      'the watch delivers the change',
      async () => {
        const a = await watcher.annotations(early);
        return a?.['minimesh.io/inject'] === 'disabled' ? a : undefined;
      },
      10_000,
    );
    expect(seen['minimesh.io/inject']).toBe('disabled');
  });

  it('answers for a namespace created a moment ago, and undefined for one that does not exist', async () => {
    await adminClient().request('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: late, annotations: { 'config.minimesh.io/proxy-log-level': 'debug' } },
    });
    // Immediately: from the cache if the watch was quicker, else from the fallback GET.
    expect(await watcher.annotations(late)).toEqual({ 'config.minimesh.io/proxy-log-level': 'debug' });
    expect(await watcher.annotations(`mm-inj-nope-${suffix}`)).toBeUndefined();
  });
});
