// The informer's list/watch/relist logic against the in-memory API server of @minimesh/kube/testing.
import { describe, expect, it } from 'vitest';
import { createLogger } from '@minimesh/runtime';
import { Informer, InformerStore } from './informer.js';
import { createFakeKubeClient, type FakeKubeClient } from './testing.js';

const PATH = '/api/v1/configmaps';
const obj = (name: string, v = '') => ({ metadata: { namespace: 'ns', name }, v });

function recordingHandler() {
  const state = new Map<string, string>();
  const log: string[] = [];
  return {
    state,
    log,
    handler: {
      apply: (r: { key: string; v: string }) => {
        state.set(r.key, r.v);
        log.push(`apply ${r.key}`);
      },
      delete: (key: string) => {
        state.delete(key);
        log.push(`delete ${key}`);
      },
      reset: (rs: Array<{ key: string; v: string }>) => {
        state.clear();
        for (const r of rs) state.set(r.key, r.v);
        log.push(`reset ${rs.map((r) => r.key).join(',')}`);
      },
    },
  };
}

const until = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
};

function make(fake: FakeKubeClient, extra: { pageSize?: number; optional?: boolean; path?: string } = {}) {
  const rec = recordingHandler();
  const informer = new Informer<{ key: string; v: string }>({
    client: fake,
    resource: 'configmaps',
    path: extra.path ?? PATH,
    transform: (o) => ({ key: (o as { metadata: { name: string } }).metadata.name, v: (o as { v?: string }).v ?? '' }),
    keyOf: (o) => `ns/${(o as { metadata: { name: string } }).metadata.name}`,
    handler: rec.handler,
    logger: createLogger({ name: 'test', level: 'silent', format: 'json' }),
    timeoutSeconds: 5,
    backoff: { initialMs: 1, maxMs: 5 },
    ...(extra.pageSize ? { pageSize: extra.pageSize } : {}),
    ...(extra.optional ? { optional: true } : {}),
  });
  return { informer, rec };
}

const watches = (fake: FakeKubeClient) => fake.calls.filter((c) => c.startsWith('WATCH'));

describe('Informer', () => {
  it('lists, then watches from the list version with bookmarks, and resumes from the last version seen', async () => {
    const fake = createFakeKubeClient();
    fake.put(PATH, obj('a'));
    fake.put(PATH, obj('b'));
    const listRv = fake.resourceVersion;
    const { informer, rec } = make(fake);
    informer.start();
    await informer.waitForSync();
    await until(() => fake.openWatches === 1);
    fake.put(PATH, obj('c'));
    await until(() => rec.log.length === 2);
    fake.bookmark();
    const bookmarkRv = fake.resourceVersion;
    await until(() => informer.lastResourceVersion === String(bookmarkRv));
    fake.endWatches(); // the server's timeoutSeconds
    await until(() => watches(fake).length === 2 && fake.openWatches === 1);
    fake.put(PATH, obj('a', 'x'));
    fake.remove(PATH, 'ns', 'b');
    await until(() => rec.log.length === 4);
    fake.endWatches();
    await until(() => watches(fake).length === 3);
    await informer.stop();
    expect(fake.calls.slice(0, 4)).toEqual([
      'GET /api/v1/configmaps?limit=500',
      `WATCH /api/v1/configmaps rv=${listRv} bookmarks=true`,
      `WATCH /api/v1/configmaps rv=${bookmarkRv} bookmarks=true`,
      `WATCH /api/v1/configmaps rv=${fake.resourceVersion} bookmarks=true`,
    ]);
    expect(rec.log).toEqual(['reset a,b', 'apply c', 'apply a', 'delete ns/b']);
    expect(rec.state.get('a')).toBe('x');
    expect(informer.listCount).toBe(1);
  });

  it('410 Gone as an ERROR event relists and resets, so objects deleted during the gap are gone', async () => {
    const fake = createFakeKubeClient();
    fake.put(PATH, obj('a'));
    fake.put(PATH, obj('b'));
    const { informer, rec } = make(fake);
    informer.start();
    await until(() => fake.openWatches === 1);
    fake.remove(PATH, 'ns', 'a');
    await until(() => rec.log.length === 2);
    fake.put(PATH, obj('d'));
    fake.expireWatches();
    await until(() => informer.listCount === 2 && fake.openWatches === 1);
    await informer.stop();
    expect(rec.log.at(-1)).toBe('reset b,d');
    expect([...rec.state.keys()].sort()).toEqual(['b', 'd']);
  });

  it('a watch from a compacted version (HTTP 410 or ERROR 410) relists', async () => {
    const fake = createFakeKubeClient();
    fake.put(PATH, obj('a'));
    const { informer } = make(fake);
    informer.start();
    await until(() => fake.openWatches === 1);
    fake.put(PATH, obj('b'));
    fake.compact();
    fake.failNext('WATCH', PATH, 410);
    fake.endWatches();
    await until(() => informer.listCount === 2 && fake.openWatches === 1);
    await informer.stop();
    expect(watches(fake).at(-1)).toBe(`WATCH /api/v1/configmaps rv=${fake.resourceVersion} bookmarks=true`);
  });

  it('errors back off and retry: a failed list is retried, a failed watch resumes from its version', async () => {
    const fake = createFakeKubeClient();
    fake.put(PATH, obj('a'));
    fake.failNext('GET', PATH, 500);
    const { informer, rec } = make(fake);
    informer.start();
    await until(() => fake.openWatches === 1);
    const rv = fake.resourceVersion;
    fake.failNext('WATCH', PATH, 503);
    fake.endWatches();
    await until(() => watches(fake).length === 3 && fake.openWatches === 1);
    await informer.stop();
    expect(fake.calls).toEqual([
      'GET /api/v1/configmaps?limit=500',
      'GET /api/v1/configmaps?limit=500',
      `WATCH /api/v1/configmaps rv=${rv} bookmarks=true`,
      `WATCH /api/v1/configmaps rv=${rv} bookmarks=true`,
      `WATCH /api/v1/configmaps rv=${rv} bookmarks=true`,
    ]);
    expect(rec.log).toEqual(['reset a']);
  });

  it('a throttled list (429) keeps the handler as it was and retries', async () => {
    const fake = createFakeKubeClient();
    fake.put(PATH, obj('a'));
    const { informer, rec } = make(fake);
    informer.start();
    await until(() => fake.openWatches === 1);
    fake.failNext('GET', PATH, 429, 2);
    fake.compact();
    fake.expireWatches();
    await until(() => informer.listCount === 2);
    await informer.stop();
    expect(rec.log).toEqual(['reset a', 'reset a']);
    expect(fake.calls.filter((c) => c.startsWith('GET')).length).toBe(4);
  });

  it('lists page by page and starts over when the continue token expired', async () => {
    const fake = createFakeKubeClient();
    for (const n of ['a', 'b', 'c', 'd', 'e']) fake.put(PATH, obj(n));
    const { informer, rec } = make(fake, { pageSize: 2 });
    informer.start();
    await informer.waitForSync();
    await informer.stop();
    expect(fake.calls.filter((c) => c.startsWith('GET'))).toHaveLength(3);
    expect(rec.log).toEqual(['reset a,b,c,d,e']);
  });

  it('an optional API that is missing counts as empty and synced', async () => {
    const fake = createFakeKubeClient();
    fake.failNext('GET', '/apis/x.io/v1/things', 404, 100);
    const { informer, rec } = make(fake, { optional: true, path: '/apis/x.io/v1/things' });
    informer.start();
    await informer.waitForSync();
    expect(informer.synced).toBe(true);
    await informer.stop();
    expect(rec.log).toEqual(['reset ']);
  });

  it('abortWatch cuts the connection and the informer resumes without relisting', async () => {
    const fake = createFakeKubeClient();
    const { informer } = make(fake);
    informer.start();
    await until(() => fake.openWatches === 1);
    expect(informer.abortWatch()).toBe(true);
    await until(() => watches(fake).length === 2 && fake.openWatches === 1);
    await informer.stop();
    expect(fake.openWatches).toBe(0);
    expect(informer.listCount).toBe(1);
  });
});

describe('InformerStore', () => {
  it('keeps records by key through apply, delete and reset', () => {
    const s = new InformerStore<{ k: string }>((r) => r.k);
    s.reset([{ k: 'a' }, { k: 'b' }]);
    s.apply({ k: 'c' });
    s.delete('a');
    expect(s.list().map((r) => r.k)).toEqual(['b', 'c']);
    expect(s.get('b')).toEqual({ k: 'b' });
    expect(s.size).toBe(2);
  });
});
