// The informer's list/watch/relist logic against a scripted fake API server.
import { describe, expect, it } from 'vitest';
import { createLogger } from '@minimesh/runtime';
import type { ApiClient } from './api-client.js';
import { Informer } from './informer.js';

type WatchScript = { events: Array<[string, unknown]>; end: null | Error | { statusCode: number } };

const obj = (name: string, rv: string, extra: Record<string, unknown> = {}) => ({
  metadata: { namespace: 'ns', name, resourceVersion: rv },
  ...extra,
});

function fakeApi(lists: Array<{ status?: number; items: unknown[]; rv: string }>, watches: WatchScript[]) {
  const calls: string[] = [];
  const api = {
    async request(method: string, path: string) {
      calls.push(`${method} ${path}`);
      const next = lists.shift();
      if (!next) return { status: 500, body: { message: 'no more lists scripted' } };
      return { status: next.status ?? 200, body: { items: next.items, metadata: { resourceVersion: next.rv } } };
    },
    watch: {
      async watch(
        path: string,
        query: Record<string, unknown>,
        cb: (type: string, o: unknown) => void,
        done: (err: unknown) => void,
      ) {
        calls.push(`WATCH ${path} rv=${String(query.resourceVersion)} bookmarks=${String(query.allowWatchBookmarks)}`);
        const script = watches.shift();
        const controller = new AbortController();
        if (!script) {
          // hang until aborted
          controller.signal.addEventListener('abort', () => done(new Error('aborted')));
          return controller;
        }
        setImmediate(() => {
          for (const [type, o] of script.events) cb(type, o);
          done(script.end);
        });
        return controller;
      },
    },
  } as unknown as ApiClient;
  return { api, calls };
}

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

const until = async (cond: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
};

function make(lists: Parameters<typeof fakeApi>[0], watches: WatchScript[]) {
  const { api, calls } = fakeApi(lists, watches);
  const rec = recordingHandler();
  const informer = new Informer<{ key: string; v: string }>({
    api,
    resource: 'things',
    path: '/api/v1/things',
    transform: (o) => ({ key: (o as { metadata: { name: string } }).metadata.name, v: (o as { v?: string }).v ?? '' }),
    keyOf: (o) => `ns/${(o as { metadata: { name: string } }).metadata.name}`,
    handler: rec.handler,
    logger: createLogger({ name: 'test', level: 'silent' }),
    timeoutSeconds: 5,
    backoff: { initialMs: 1, maxMs: 5 },
  });
  return { informer, calls, rec };
}

describe('Informer', () => {
  it('lists, then watches from the list version with bookmarks, and resumes from the last version seen', async () => {
    const { informer, calls, rec } = make(
      [{ items: [obj('a', '1'), obj('b', '2')], rv: '10' }],
      [
        {
          events: [
            ['ADDED', obj('c', '11')],
            ['BOOKMARK', obj('', '15')],
          ],
          end: null,
        },
        {
          events: [
            ['MODIFIED', obj('a', '16', { v: 'x' })],
            ['DELETED', obj('b', '17')],
          ],
          end: null,
        },
      ],
    );
    informer.start();
    await informer.waitForSync();
    await until(() => calls.length >= 4);
    await informer.stop();
    expect(calls.slice(0, 4)).toEqual([
      'GET /api/v1/things?limit=500',
      'WATCH /api/v1/things rv=10 bookmarks=true',
      'WATCH /api/v1/things rv=15 bookmarks=true',
      'WATCH /api/v1/things rv=17 bookmarks=true',
    ]);
    expect(rec.log).toEqual(['reset a,b', 'apply c', 'apply a', 'delete ns/b']);
    expect(informer.listCount).toBe(1);
  });

  it('410 Gone as an ERROR event relists and resets, so objects deleted during the gap are gone', async () => {
    const { informer, calls, rec } = make(
      [
        { items: [obj('a', '1'), obj('b', '2')], rv: '10' },
        { items: [obj('b', '30'), obj('d', '31')], rv: '40' },
      ],
      [
        {
          events: [
            ['ADDED', obj('c', '11')],
            ['ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' }],
          ],
          end: null,
        },
      ],
    );
    informer.start();
    await until(() => informer.listCount === 2 && calls.length >= 4);
    await informer.stop();
    expect(calls.slice(0, 4)).toEqual([
      'GET /api/v1/things?limit=500',
      'WATCH /api/v1/things rv=10 bookmarks=true',
      'GET /api/v1/things?limit=500',
      'WATCH /api/v1/things rv=40 bookmarks=true',
    ]);
    expect(rec.log).toEqual(['reset a,b', 'apply c', 'reset b,d']);
    expect([...rec.state.keys()].sort()).toEqual(['b', 'd']);
  });

  it('410 as an HTTP status of the watch request also relists', async () => {
    const { informer, calls } = make(
      [
        { items: [], rv: '10' },
        { items: [], rv: '50' },
      ],
      [{ events: [], end: { statusCode: 410 } }],
    );
    informer.start();
    await until(() => informer.listCount === 2);
    await informer.stop();
    expect(calls).toContain('WATCH /api/v1/things rv=50 bookmarks=true');
  });

  it('errors back off and retry: a failed list is retried, a failed watch resumes from its version', async () => {
    const { informer, calls, rec } = make(
      [
        { status: 500, items: [], rv: '' },
        { items: [obj('a', '1')], rv: '10' },
      ],
      [{ events: [['ADDED', obj('b', '12')]], end: new Error('connection reset') }],
    );
    informer.start();
    await until(() => calls.filter((c) => c.startsWith('WATCH')).length >= 2);
    await informer.stop();
    expect(calls).toEqual([
      'GET /api/v1/things?limit=500',
      'GET /api/v1/things?limit=500',
      'WATCH /api/v1/things rv=10 bookmarks=true',
      'WATCH /api/v1/things rv=12 bookmarks=true',
    ]);
    expect(rec.log).toEqual(['reset a', 'apply b']);
  });

  it('abortWatch cuts the connection and the informer resumes without relisting', async () => {
    const { informer, calls } = make([{ items: [], rv: '10' }], []);
    informer.start();
    await until(() => calls.length === 2);
    await until(() => informer.abortWatch());
    await until(() => calls.length === 3);
    await informer.stop();
    expect(calls).toEqual([
      'GET /api/v1/things?limit=500',
      'WATCH /api/v1/things rv=10 bookmarks=true',
      'WATCH /api/v1/things rv=10 bookmarks=true',
    ]);
    expect(informer.listCount).toBe(1);
  });
});
