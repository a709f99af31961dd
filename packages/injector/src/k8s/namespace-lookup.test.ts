// The namespace lookup against the in-memory API server of @minimesh/kube/testing: once its informer has
// listed, admissions read the cache and make no request (a GET per admission is what failed more than
// half the admissions at 50 pods/s, docs/scale.md); a namespace the cache does not hold yet is one list
// of that name (the in-memory API answers the field selector here);
// changes arrive through the watch. The real API server's side is in test/namespace-lookup.test.ts.
import { createFakeKubeClient, type FakeKubeClient } from '@minimesh/kube/testing';
import { createLogger } from '@minimesh/runtime';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createNamespaceLookup, type NamespaceLookup } from './namespace-lookup.js';

const NS = '/api/v1/namespaces';
let api: FakeKubeClient;
let lookup: NamespaceLookup;

const BY_NAME = 'GET /api/v1/namespaces?fieldSelector=';
const gets = (): string[] => api.calls.filter((c) => c.startsWith(BY_NAME));

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('condition not met within 2 s');
}

beforeEach(() => {
  api = createFakeKubeClient();
  api.put(NS, { metadata: { name: 'shop', annotations: { 'minimesh.io/inject': 'enabled' } } });
  api.handle('GET', '/api/v1/namespaces?fieldSelector=', (req) => {
    const name = decodeURIComponent(req.path.split('=').slice(1).join('=')).replace(/^metadata\.name=/, '');
    const ns = api.object(NS, undefined, name);
    return { status: 200, body: { kind: 'NamespaceList', items: ns ? [ns] : [] } };
  });
  lookup = createNamespaceLookup({ client: api, logger: createLogger({ name: 'test', level: 'silent' }) });
});

afterEach(async () => {
  await lookup.stop();
});

describe('namespace lookup', () => {
  it('answers from the cache once synced: a burst of admissions makes no request', async () => {
    lookup.start();
    await lookup.waitForSync();
    const before = api.calls.length;
    const answers = await Promise.all(Array.from({ length: 200 }, () => lookup.annotations('shop')));
    expect(answers.every((a) => a?.['minimesh.io/inject'] === 'enabled')).toBe(true);
    expect(api.calls.slice(before).filter((c) => !c.startsWith('WATCH '))).toEqual([]);
    expect(lookup.gets).toBe(0);
  });

  it('reads the one namespace before the first list, and one the cache does not hold yet', async () => {
    expect(await lookup.annotations('shop')).toEqual({ 'minimesh.io/inject': 'enabled' });
    expect(gets()).toEqual([`${BY_NAME}metadata.name%3Dshop`]);
    lookup.start();
    await lookup.waitForSync();
    expect(await lookup.annotations('nowhere')).toBeUndefined();
    expect(lookup.gets).toBe(2);
  });

  it('sees an annotation change and a new namespace through the watch', async () => {
    lookup.start();
    await lookup.waitForSync();
    // In this order: once the change to shop is seen, the watch has delivered late too.
    api.put(NS, { metadata: { name: 'late', annotations: { 'config.minimesh.io/proxy-log-level': 'debug' } } });
    api.put(NS, { metadata: { name: 'shop', annotations: { 'minimesh.io/inject': 'disabled' } } });
    await until(async () => (await lookup.annotations('shop'))?.['minimesh.io/inject'] === 'disabled');
    expect(await lookup.annotations('late')).toEqual({ 'config.minimesh.io/proxy-log-level': 'debug' });
    expect(lookup.gets).toBe(0);
  });

  it('a copy each time: a caller that changes the answer does not change the cache', async () => {
    lookup.start();
    await lookup.waitForSync();
    const a = await lookup.annotations('shop');
    if (a) a['minimesh.io/inject'] = 'disabled';
    expect((await lookup.annotations('shop'))?.['minimesh.io/inject']).toBe('enabled');
  });
});
