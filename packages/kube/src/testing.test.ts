// The fake API server keeps the semantics tests rely on: conflicts, optimistic concurrency, merge
// patches, label selectors, watch replay from a version, and handlers for virtual APIs.
import { describe, expect, it } from 'vitest';
import { createFakeKubeClient, parseApiPath } from './testing.js';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/cp/leases';

describe('createFakeKubeClient', () => {
  it('creates once (409 after), updates only from the current version, merge-patches and deletes', async () => {
    const fake = createFakeKubeClient();
    const created = await fake.requestOk<{ metadata: { resourceVersion: string } }>('POST', LEASES, {
      metadata: { name: 'l' },
      spec: { holderIdentity: 'a' },
    });
    expect((await fake.request('POST', LEASES, { metadata: { name: 'l' } })).status).toBe(409);
    const stale = { metadata: { name: 'l', resourceVersion: '1' }, spec: { holderIdentity: 'b' } };
    expect((await fake.request('PUT', `${LEASES}/l`, stale)).status).toBe(409);
    const fresh = {
      metadata: { name: 'l', resourceVersion: created.metadata.resourceVersion },
      spec: { holderIdentity: 'b' },
    };
    expect((await fake.request('PUT', `${LEASES}/l`, fresh)).status).toBe(200);
    await fake.requestOk('PATCH', `${LEASES}/l`, { metadata: { labels: { x: 'y' } }, spec: { holderIdentity: null } });
    expect(fake.object(LEASES, 'cp', 'l')).toMatchObject({ metadata: { labels: { x: 'y' } }, spec: {} });
    expect((await fake.request('DELETE', `${LEASES}/l`)).status).toBe(200);
    expect(await fake.get(`${LEASES}/l`)).toBeUndefined();
    await expect(fake.requestOk('GET', `${LEASES}/l`)).rejects.toThrow(`GET ${LEASES}/l: HTTP 404 NotFound`);
  });

  it('takes a merge patch with a resourceVersion as a precondition; on /status only the status changes', async () => {
    const fake = createFakeKubeClient();
    const ROUTES = '/apis/gateway.networking.k8s.io/v1/namespaces/a/httproutes';
    fake.put(ROUTES, { metadata: { name: 'r' }, spec: { rules: [] } });
    const rv = fake.object(ROUTES, 'a', 'r')?.metadata?.resourceVersion as string;
    const stale = { metadata: { resourceVersion: '0' }, status: { parents: [] } };
    expect((await fake.request('PATCH', `${ROUTES}/r/status`, stale)).status).toBe(409);
    const patch = { metadata: { resourceVersion: rv }, spec: { rules: null }, status: { parents: [{ x: 1 }] } };
    expect((await fake.request('PATCH', `${ROUTES}/r/status`, JSON.stringify(patch))).status).toBe(200);
    expect(fake.object(ROUTES, 'a', 'r')).toMatchObject({ spec: { rules: [] }, status: { parents: [{ x: 1 }] } });
  });

  it('lists across namespaces or in one, filtered by labels', async () => {
    const fake = createFakeKubeClient();
    fake.put('/api/v1/namespaces/a/pods', { metadata: { name: 'p1', labels: { app: 'web' } } });
    fake.put('/api/v1/namespaces/b/pods', { metadata: { name: 'p2', labels: { app: 'db' } } });
    const names = async (path: string) =>
      (await fake.requestOk<{ items: Array<{ metadata: { name: string } }> }>('GET', path)).items.map(
        (i) => i.metadata.name,
      );
    expect(await names('/api/v1/pods')).toEqual(['p1', 'p2']);
    expect(await names('/api/v1/namespaces/b/pods')).toEqual(['p2']);
    expect(await names('/api/v1/pods?labelSelector=app%3Dweb')).toEqual(['p1']);
  });

  it('replays a watch from a version and answers virtual APIs through handlers', async () => {
    const fake = createFakeKubeClient();
    fake.put('/api/v1/namespaces', { metadata: { name: 'one' } });
    const from = fake.resourceVersion;
    fake.put('/api/v1/namespaces', { metadata: { name: 'two' } });
    fake.remove('/api/v1/namespaces', undefined, 'one');
    const seen: string[] = [];
    const ctrl = new AbortController();
    const done = fake.watch(
      '/api/v1/namespaces',
      { resourceVersion: String(from) },
      (t, o) => {
        seen.push(`${t} ${(o as { metadata: { name: string } }).metadata.name}`);
        if (seen.length === 2) ctrl.abort();
      },
      { signal: ctrl.signal },
    );
    expect(await done).toBe('aborted');
    expect(seen).toEqual(['ADDED two', 'DELETED one']);
    fake.handle('POST', '/apis/authentication.k8s.io/v1/tokenreviews', (req) => ({
      status: 201,
      body: { status: { authenticated: (req.body as { spec: { token: string } }).spec.token === 'good' } },
    }));
    const r = await fake.requestOk<{ status: { authenticated: boolean } }>(
      'POST',
      '/apis/authentication.k8s.io/v1/tokenreviews',
      {
        spec: { token: 'good' },
      },
    );
    expect(r.status.authenticated).toBe(true);
  });

  it('parses API paths', () => {
    expect(parseApiPath('/api/v1/namespaces/ns/pods/p/status?x=1')).toMatchObject({
      collection: '/api/v1/pods',
      namespace: 'ns',
      name: 'p',
      subresource: 'status',
    });
    expect(parseApiPath('/api/v1/namespaces/ns')).toMatchObject({ collection: '/api/v1/namespaces', name: 'ns' });
    expect(parseApiPath('/apis/discovery.k8s.io/v1/endpointslices')).toMatchObject({
      collection: '/apis/discovery.k8s.io/v1/endpointslices',
      namespace: undefined,
    });
  });
});
