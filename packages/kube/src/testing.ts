// @minimesh/kube/testing: an in-memory API server behind the KubeClient interface, for the tests that
// do not need the real one. It keeps objects per collection with a global resourceVersion, answers
// list (with limit/continue), get, create, update (optimistic concurrency: a stale resourceVersion is
// a 409), merge-patch, delete, and watch (replay from a version, bookmarks, 410 for a compacted
// version); tests add handlers for virtual APIs (TokenReview) and inject failures.
import { connect, createServer, type Socket } from 'node:net';
import type {
  ApiResponse,
  KubeClient,
  KubeClientStats,
  RequestOptions,
  WatchEnd,
  WatchEventType,
  WatchQuery,
} from './client.js';
import { KubeApiError, statusMessage, statusReason } from './errors.js';
import { pipeBoth } from '@minimesh/runtime';

// Kubernetes objects are plain JSON here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type KubeObject = Record<string, any>;

export interface FakeRequest {
  method: string;
  path: string;
  body: unknown;
}

export type FakeHandler = (req: FakeRequest) => { status: number; body?: unknown } | undefined;

export interface FakeKubeClient extends KubeClient {
  /** Every request and watch, in order ("GET /api/v1/pods?limit=500", "WATCH /api/v1/pods rv=12"). */
  readonly calls: string[];
  /** Creates or replaces an object as an admin would (no 409); returns it with its new resourceVersion. */
  put(collectionPath: string, obj: KubeObject): KubeObject;
  /** Deletes an object by collection path and name (and namespace). */
  remove(collectionPath: string, namespace: string | undefined, name: string): void;
  /** The stored object, if any. */
  object(collectionPath: string, namespace: string | undefined, name: string): KubeObject | undefined;
  /** The current resourceVersion. */
  readonly resourceVersion: number;
  /** Answers requests matching method and path prefix with the handler's result (first match wins). */
  handle(method: string, pathPrefix: string, handler: FakeHandler): void;
  /** The next `times` requests (or watches, with method 'WATCH') whose path starts with the prefix get `status`. */
  failNext(method: string, pathPrefix: string, status: number, times?: number): void;
  /** Drops every failure injected by failNext that has not been used up (the API recovers). */
  clearFailures(): void;
  /** Forgets history up to now: a watch from an older version gets 410 Gone. */
  compact(): void;
  /** Sends an ERROR 410 event to every open watch (the server's cache moved past them). */
  expireWatches(): void;
  /** Ends every open watch, as the server's timeoutSeconds does. */
  endWatches(): void;
  /** Sends a BOOKMARK with the current version to watches that asked for bookmarks. */
  bookmark(): void;
  /** Open watches. */
  readonly openWatches: number;
}

interface Parsed {
  /** "/api/v1/pods" or "/apis/g/v/x": the collection across namespaces. */
  collection: string;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  query: URLSearchParams;
}

/** Splits an API path into collection, namespace, name and subresource. */
export function parseApiPath(path: string): Parsed {
  const [p = '', qs = ''] = path.split('?');
  const segs = p.split('/').filter((s) => s !== '');
  const prefixLen = segs[0] === 'api' ? 2 : 3; // api/v1 or apis/group/version
  const prefix = `/${segs.slice(0, prefixLen).join('/')}`;
  const rest = segs.slice(prefixLen);
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    return {
      collection: `${prefix}/${rest[2]}`,
      namespace: rest[1],
      name: rest[3],
      subresource: rest[4],
      query: new URLSearchParams(qs),
    };
  }
  return {
    collection: `${prefix}/${rest[0] ?? ''}`,
    namespace: undefined,
    name: rest[1],
    subresource: rest[2],
    query: new URLSearchParams(qs),
  };
}

const keyOf = (ns: string | undefined, name: string): string => (ns ? `${ns}/${name}` : name);

function status(code: number, reason: string, message: string): { status: number; body: KubeObject } {
  return { status: code, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code } };
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: KubeObject =
    target && typeof target === 'object' && !Array.isArray(target) ? { ...(target as KubeObject) } : {};
  for (const [k, v] of Object.entries(patch as KubeObject)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function matchesLabels(obj: KubeObject, selector: string | null): boolean {
  if (!selector) return true;
  const labels = (obj.metadata?.labels ?? {}) as Record<string, string>;
  return selector.split(',').every((term) => {
    const [k = '', v] = term.split('=');
    return v === undefined ? k in labels : labels[k] === v;
  });
}

interface Watcher {
  collection: string;
  namespace: string | undefined;
  bookmarks: boolean;
  send(type: WatchEventType, obj: unknown): void;
  end(): void;
}

export function createFakeKubeClient(opts: { namespace?: string } = {}): FakeKubeClient {
  const stores = new Map<string, Map<string, KubeObject>>();
  const history: Array<{
    rv: number;
    collection: string;
    namespace: string | undefined;
    type: WatchEventType;
    obj: KubeObject;
  }> = [];
  const watchers = new Set<Watcher>();
  const handlers: Array<{ method: string; prefix: string; fn: FakeHandler }> = [];
  const failures: Array<{ method: string; prefix: string; status: number; times: number }> = [];
  const calls: string[] = [];
  let rv = 1;
  let compactedBelow = 0;
  let uid = 0;
  const counters = { requests: 0 };

  const store = (c: string): Map<string, KubeObject> => {
    let s = stores.get(c);
    if (!s) stores.set(c, (s = new Map()));
    return s;
  };
  const clone = <T>(o: T): T => structuredClone(o);

  function record(collection: string, namespace: string | undefined, type: WatchEventType, obj: KubeObject): void {
    history.push({ rv, collection, namespace, type, obj: clone(obj) });
    for (const w of watchers) {
      if (w.collection === collection && (w.namespace === undefined || w.namespace === namespace))
        w.send(type, clone(obj));
    }
  }

  function write(collection: string, namespace: string | undefined, obj: KubeObject, type: WatchEventType): KubeObject {
    rv++;
    const stored = clone(obj);
    stored.metadata = { ...(stored.metadata ?? {}), resourceVersion: String(rv) };
    if (namespace) stored.metadata.namespace = namespace;
    stored.metadata.uid ??= `fake-uid-${++uid}`;
    stored.metadata.creationTimestamp ??= new Date().toISOString();
    store(collection).set(keyOf(namespace, stored.metadata.name as string), stored);
    record(collection, namespace, type, stored);
    return clone(stored);
  }

  function takeFailure(method: string, path: string): number | undefined {
    const f = failures.find((x) => (x.method === method || x.method === '*') && path.startsWith(x.prefix));
    if (!f) return undefined;
    if (--f.times <= 0) failures.splice(failures.indexOf(f), 1);
    return f.status;
  }

  function serve(method: string, path: string, body: unknown): { status: number; body?: unknown } {
    const failed = takeFailure(method, path);
    if (failed !== undefined)
      return status(failed, failed === 429 ? 'TooManyRequests' : 'InternalError', 'injected failure');
    for (const h of handlers) {
      if (h.method === method && path.startsWith(h.prefix)) {
        const r = h.fn({ method, path, body });
        if (r) return r;
      }
    }
    const p = parseApiPath(path);
    const s = store(p.collection);
    const what = `${p.collection.split('/').pop()} "${p.name ?? ''}"`;
    if (method === 'GET' && p.name === undefined) {
      const all = [...s.values()]
        .filter((o) => p.namespace === undefined || o.metadata?.namespace === p.namespace)
        .filter((o) => matchesLabels(o, p.query.get('labelSelector')))
        .sort((a, b) =>
          keyOf(a.metadata?.namespace, a.metadata?.name).localeCompare(keyOf(b.metadata?.namespace, b.metadata?.name)),
        );
      const limit = Number(p.query.get('limit') ?? 0);
      const cont = p.query.get('continue');
      let start = 0;
      let listRv = rv;
      if (cont) {
        const [offset, atRv] = cont.split(':').map(Number);
        if ((atRv ?? 0) < compactedBelow) return status(410, 'Expired', 'The provided continue parameter is too old');
        start = offset ?? 0;
        listRv = atRv ?? rv;
      }
      const items = limit > 0 ? all.slice(start, start + limit) : all.slice(start);
      const next = limit > 0 && start + limit < all.length ? `${start + limit}:${listRv}` : undefined;
      return {
        status: 200,
        body: {
          kind: 'List',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(listRv), ...(next ? { continue: next } : {}) },
          items: clone(items),
        },
      };
    }
    if (method === 'POST' && p.name === undefined) {
      const obj = body as KubeObject;
      const name = obj?.metadata?.name as string | undefined;
      if (!name) return status(422, 'Invalid', 'metadata.name: Required value');
      const ns = p.namespace ?? obj.metadata?.namespace;
      if (s.has(keyOf(ns, name)))
        return status(409, 'AlreadyExists', `${p.collection.split('/').pop()} "${name}" already exists`);
      return { status: 201, body: write(p.collection, ns, obj, 'ADDED') };
    }
    if (p.name === undefined)
      return status(405, 'MethodNotAllowed', `${method} on a collection is not supported by the fake`);
    const key = keyOf(p.namespace, p.name);
    const existing = s.get(key);
    if (method === 'GET')
      return existing ? { status: 200, body: clone(existing) } : status(404, 'NotFound', `${what} not found`);
    if (!existing) return status(404, 'NotFound', `${what} not found`);
    if (method === 'PUT') {
      const obj = body as KubeObject;
      const want = obj?.metadata?.resourceVersion;
      if (want !== undefined && want !== existing.metadata?.resourceVersion)
        return status(409, 'Conflict', `Operation cannot be fulfilled on ${what}: the object has been modified`);
      const next = p.subresource === 'status' ? { ...existing, status: obj.status } : obj;
      return {
        status: 200,
        body: write(
          p.collection,
          p.namespace,
          { ...next, metadata: { ...existing.metadata, ...obj.metadata } },
          'MODIFIED',
        ),
      };
    }
    if (method === 'PATCH') {
      // A merge patch naming a resourceVersion is a precondition; on the status subresource only the
      // status changes (as the API server does both).
      const patch = body as KubeObject;
      const want = patch?.metadata?.resourceVersion;
      if (want !== undefined && want !== existing.metadata?.resourceVersion)
        return status(409, 'Conflict', `Operation cannot be fulfilled on ${what}: the object has been modified`);
      const merged = mergePatch(existing, body) as KubeObject;
      const next = p.subresource === 'status' ? { ...existing, status: merged.status } : merged;
      return { status: 200, body: write(p.collection, p.namespace, next, 'MODIFIED') };
    }
    if (method === 'DELETE') {
      s.delete(key);
      rv++;
      const gone = { ...clone(existing), metadata: { ...existing.metadata, resourceVersion: String(rv) } };
      record(p.collection, p.namespace, 'DELETED', gone);
      return { status: 200, body: gone };
    }
    return status(405, 'MethodNotAllowed', `${method} is not supported by the fake`);
  }

  async function request<T>(
    method: string,
    path: string,
    body?: unknown,
    _ro?: RequestOptions,
  ): Promise<ApiResponse<T>> {
    await Promise.resolve();
    counters.requests++;
    calls.push(`${method} ${path}`);
    const parsedBody = typeof body === 'string' ? JSON.parse(body) : body;
    const r = serve(method, path, parsedBody === undefined ? undefined : clone(parsedBody));
    return { status: r.status, body: r.body as T, headers: {} };
  }

  async function requestOk<T>(method: string, path: string, body?: unknown, ro?: RequestOptions): Promise<T> {
    const res = await request<T>(method, path, body, ro);
    if (res.status < 200 || res.status > 299) {
      const reason = statusReason(res.body);
      throw new KubeApiError(method, path, res.status, statusMessage(res.body), reason ? { reason } : {});
    }
    return res.body;
  }

  function watch(
    path: string,
    query: WatchQuery,
    onEvent: (type: WatchEventType, object: unknown) => void,
    wo: { signal?: AbortSignal } = {},
  ): Promise<WatchEnd> {
    counters.requests++;
    calls.push(
      `WATCH ${path} rv=${query.resourceVersion ?? ''} bookmarks=${String(query.allowWatchBookmarks ?? false)}`,
    );
    const failed = takeFailure('WATCH', path);
    if (failed !== undefined) return Promise.reject(new KubeApiError('WATCH', path, failed, 'injected failure'));
    const p = parseApiPath(path);
    const from = Number(query.resourceVersion || rv);
    return new Promise<WatchEnd>((resolve, reject) => {
      let done = false;
      const queue: Array<[WatchEventType, unknown]> = [];
      let scheduled = false;
      const finish = (how: WatchEnd | Error): void => {
        if (done) return;
        done = true;
        watchers.delete(w);
        wo.signal?.removeEventListener('abort', onAbort);
        if (how instanceof Error) reject(how);
        else resolve(how);
      };
      const flush = (): void => {
        scheduled = false;
        while (queue.length > 0 && !done) {
          const [type, obj] = queue.shift() as [WatchEventType, unknown];
          try {
            onEvent(type, obj);
          } catch (err) {
            finish(err as Error);
          }
        }
      };
      const w: Watcher = {
        collection: p.collection,
        namespace: p.namespace,
        bookmarks: query.allowWatchBookmarks === true,
        send(type, obj) {
          if (done) return;
          queue.push([type, obj]);
          if (!scheduled) {
            scheduled = true;
            setImmediate(flush);
          }
        },
        end() {
          setImmediate(() => {
            flush();
            finish('ended');
          });
        },
      };
      const onAbort = (): void => finish('aborted');
      if (wo.signal?.aborted) return finish('aborted');
      wo.signal?.addEventListener('abort', onAbort, { once: true });
      watchers.add(w);
      if (from < compactedBelow) {
        w.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: `too old resource version: ${from}` });
        return;
      }
      for (const h of history) {
        if (h.rv > from && h.collection === p.collection && (p.namespace === undefined || h.namespace === p.namespace))
          w.send(h.type, clone(h.obj));
      }
    });
  }

  return {
    server: 'https://fake.invalid',
    namespace: opts.namespace,
    calls,
    request,
    requestOk,
    async get<T>(path: string, ro?: RequestOptions): Promise<T | undefined> {
      const res = await request<T>('GET', path, undefined, ro);
      if (res.status === 404) return undefined;
      if (res.status < 200 || res.status > 299)
        throw new KubeApiError('GET', path, res.status, statusMessage(res.body));
      return res.body;
    },
    watch,
    put(collectionPath, obj) {
      const p = parseApiPath(collectionPath);
      const ns = p.namespace ?? obj.metadata?.namespace;
      const exists = store(p.collection).has(keyOf(ns, obj.metadata?.name));
      return write(p.collection, ns, obj, exists ? 'MODIFIED' : 'ADDED');
    },
    remove(collectionPath, namespace, name) {
      const p = parseApiPath(collectionPath);
      const s = store(p.collection);
      const existing = s.get(keyOf(namespace, name));
      if (!existing) return;
      s.delete(keyOf(namespace, name));
      rv++;
      record(p.collection, namespace, 'DELETED', {
        ...existing,
        metadata: { ...existing.metadata, resourceVersion: String(rv) },
      });
    },
    object(collectionPath, namespace, name) {
      const o = store(parseApiPath(collectionPath).collection).get(keyOf(namespace, name));
      return o ? clone(o) : undefined;
    },
    get resourceVersion() {
      return rv;
    },
    handle(method, pathPrefix, fn) {
      handlers.push({ method, prefix: pathPrefix, fn });
    },
    failNext(method, pathPrefix, code, times = 1) {
      failures.push({ method, prefix: pathPrefix, status: code, times });
    },
    clearFailures() {
      failures.length = 0;
    },
    compact() {
      compactedBelow = rv;
      history.length = 0;
    },
    expireWatches() {
      for (const w of watchers)
        w.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    },
    endWatches() {
      for (const w of [...watchers]) w.end();
    },
    bookmark() {
      for (const w of watchers) if (w.bookmarks) w.send('BOOKMARK', { metadata: { resourceVersion: String(rv) } });
    },
    get openWatches() {
      return watchers.size;
    },
    stats: (): KubeClientStats => ({
      connectionsOpened: 0,
      protocol: 'fake',
      requests: counters.requests,
      throttled: 0,
      rateLimited: 0,
      rateLimitedMs: 0,
    }),
    async close() {
      for (const w of [...watchers]) w.end();
    },
  };
}

/** A TCP relay in front of an API server that counts the connections it accepts (bytes pass untouched: TLS stays end to end). */
export interface ConnectionCounter {
  /** The relay's port on 127.0.0.1: point a kubeconfig's server here (the certificate's IP SAN 127.0.0.1 still matches). */
  port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Connections open now. */
  readonly open: number;
  close(): Promise<void>;
}

export async function startConnectionCounter(target: { host: string; port: number }): Promise<ConnectionCounter> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    connections++;
    const upstream = connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    pipeBoth(client, upstream, () => {
      sockets.delete(client);
      sockets.delete(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    get connections() {
      return connections;
    },
    get open() {
      return sockets.size / 2;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
