// The namespace lookup against the real API server. Its single-namespace read (a list by name: before the
// informer's first list, or a namespace the cache does not hold yet): the annotations as they are the
// moment after they were written, undefined for a namespace that does not exist, a clear InjectorError
// when the API server cannot be reached. Its informer: once synced, answers without a request and sees
// changes through the watch (the in-memory side is src/k8s/namespace-lookup.test.ts).
import { createKubeClient, loadKubeConfig, type KubeClient, type KubeConfig } from '@minimesh/kube';
import { createLogger } from '@minimesh/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminClient, ensureCluster } from '@minimesh/local-cluster';
import { createNamespaceLookup, InjectorError, type NamespaceLookup } from '../src/index.js';

const suffix = Math.random().toString(16).slice(2, 8);
const early = `mm-inj-nsl-a-${suffix}`;
const late = `mm-inj-nsl-b-${suffix}`;
let lookup: NamespaceLookup;
let kube: KubeClient;
let config: KubeConfig;
const logger = createLogger({ name: 'test', level: 'silent' });

beforeAll(async () => {
  const info = await ensureCluster();
  await adminClient().request('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: early, annotations: { 'minimesh.io/inject': 'enabled' } },
  });
  config = await loadKubeConfig({ path: info.kubeconfigPath });
  kube = createKubeClient(config, { userAgent: 'minimesh-injector/test' });
  lookup = createNamespaceLookup({ client: kube, logger });
});

afterAll(async () => {
  await lookup?.stop();
  await kube?.close();
  for (const ns of [early, late])
    await adminClient()
      .request('DELETE', `/api/v1/namespaces/${ns}`)
      .catch(() => undefined);
});

describe('namespace lookup', () => {
  it('reads the annotations of a namespace', async () => {
    expect(await lookup.annotations(early)).toEqual({ 'minimesh.io/inject': 'enabled' });
  });

  it('before the informer has listed, the next admission after a write reads the write', async () => {
    await adminClient().request(
      'PATCH',
      `/api/v1/namespaces/${early}`,
      { metadata: { annotations: { 'minimesh.io/inject': 'disabled' } } },
      'application/merge-patch+json',
    );
    expect((await lookup.annotations(early))?.['minimesh.io/inject']).toBe('disabled');
  });

  it('answers for a namespace created a moment ago, and undefined for one that does not exist', async () => {
    await adminClient().request('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: late, annotations: { 'config.minimesh.io/proxy-log-level': 'debug' } },
    });
    expect(await lookup.annotations(late)).toEqual({ 'config.minimesh.io/proxy-log-level': 'debug' });
    expect(await lookup.annotations(`mm-inj-nope-${suffix}`)).toBeUndefined();
  });

  it('once synced, answers from the cache and follows changes through the watch', async () => {
    lookup.start();
    await lookup.waitForSync();
    const reads = lookup.gets;
    expect(await lookup.annotations(late)).toEqual({ 'config.minimesh.io/proxy-log-level': 'debug' });
    await adminClient().request(
      'PATCH',
      `/api/v1/namespaces/${early}`,
      { metadata: { annotations: { 'minimesh.io/inject': 'enabled' } } },
      'application/merge-patch+json',
    );
    const until = Date.now() + 10_000;
    while ((await lookup.annotations(early))?.['minimesh.io/inject'] !== 'enabled' && Date.now() < until)
      await new Promise((r) => setTimeout(r, 20));
    expect((await lookup.annotations(early))?.['minimesh.io/inject']).toBe('enabled');
    expect(lookup.gets).toBe(reads);
  });

  it('names the namespace and the cause when the API server cannot be reached', async () => {
    // The same credentials, and a port where nothing listens.
    const dead = createKubeClient(
      { ...config, server: 'https://127.0.0.1:1' },
      { userAgent: 'minimesh-injector/test' },
    );
    try {
      const err = await createNamespaceLookup({ client: dead, logger, timeoutMs: 1000 })
        .annotations(early)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InjectorError);
      expect((err as InjectorError).code).toBe('MINIMESH_INJECTOR_NAMESPACE_LOOKUP');
      expect((err as Error).message).toMatch(new RegExp(`^namespace ${early}: the lookup failed: .+`));
    } finally {
      await dead.close();
    }
  });
});
