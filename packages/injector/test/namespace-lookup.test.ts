// The namespace lookup against the real API server: a namespace's annotations as they are the moment
// after they were written (no cache to lag behind), undefined for a namespace that does not exist, and
// a clear InjectorError when the API server cannot be reached.
import { createKubeClient, loadKubeConfig, type KubeClient, type KubeConfig } from '@minimesh/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminClient, ensureCluster } from '@minimesh/local-cluster';
import { createNamespaceLookup, InjectorError, type NamespaceLookup } from '../src/index.js';

const suffix = Math.random().toString(16).slice(2, 8);
const early = `mm-inj-nsl-a-${suffix}`;
const late = `mm-inj-nsl-b-${suffix}`;
let lookup: NamespaceLookup;
let kube: KubeClient;
let config: KubeConfig;

beforeAll(async () => {
  const info = await ensureCluster();
  await adminClient().request('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: early, annotations: { 'minimesh.io/inject': 'enabled' } },
  });
  config = await loadKubeConfig({ path: info.kubeconfigPath });
  kube = createKubeClient(config, { userAgent: 'minimesh-injector/test' });
  lookup = createNamespaceLookup({ client: kube });
});

afterAll(async () => {
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

  it('sees an annotation change at once: the next admission after a write reads the write', async () => {
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

  it('names the namespace and the cause when the API server cannot be reached', async () => {
    // The same credentials, and a port where nothing listens.
    const dead = createKubeClient(
      { ...config, server: 'https://127.0.0.1:1' },
      { userAgent: 'minimesh-injector/test' },
    );
    try {
      const err = await createNamespaceLookup({ client: dead, timeoutMs: 1000 })
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
