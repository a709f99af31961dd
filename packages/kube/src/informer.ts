// The one list+watch: list (every page, with its resourceVersion), then watch with bookmarks from that
// version; a watch that ends is resumed where it left off; 410 Gone (or an expired version) relists
// and resets the handler from the fresh list, so nothing stale survives; errors back off and retry,
// and the handler keeps what it has meanwhile (callers serve from it). Objects are transformed into
// small records before they reach the handler. Handlers are synchronous and must not block.
import { Backoff, sleep, type BackoffOptions, type Logger } from '@minimesh/runtime';
import type { KubeClient, WatchEventType } from './client.js';
import { KubeApiError } from './errors.js';

export interface InformerHandler<R> {
  apply(record: R): void;
  delete(key: string): void;
  reset(records: R[]): void;
}

/** Counters a program may wire to its metrics (destination: watch restarts and cache-synced gauges). */
export interface InformerHooks {
  onRestart?(resource: string, reason: 'ended' | 'expired' | 'aborted' | 'error'): void;
  onSynced?(resource: string): void;
}

export interface InformerOptions<R> {
  client: KubeClient;
  /** Resource name for logs and metrics, e.g. "endpointslices". */
  resource: string;
  /** Collection path, e.g. "/apis/discovery.k8s.io/v1/endpointslices". */
  path: string;
  transform: (obj: unknown) => R;
  keyOf: (obj: unknown) => string;
  handler: InformerHandler<R>;
  logger: Logger;
  hooks?: InformerHooks;
  /** Server-side watch timeout; default a random 300-600 s so replicas do not reconnect in step. */
  timeoutSeconds?: number;
  /** Retry backoff after errors (default 500 ms doubling to 30 s). */
  backoff?: BackoffOptions;
  /** Short name for per-object debug lines ("Adding ES ns/name"). */
  shortName?: string;
  /** A missing API (404, e.g. a CRD not installed yet) counts as an empty, synced list, retried later. */
  optional?: boolean;
  /** Page size of list requests (default 500). */
  pageSize?: number;
  labelSelector?: string;
  fieldSelector?: string;
}

type Meta = { metadata?: { resourceVersion?: string; continue?: string; namespace?: string; name?: string } };

/** "ns/name", or "name" for cluster-scoped objects: the key informers use by default. */
export function keyOfObject(obj: unknown): string {
  const m = (obj as Meta | undefined)?.metadata;
  return m?.namespace ? `${m.namespace}/${m.name ?? ''}` : (m?.name ?? '');
}

export class Informer<R> {
  private readonly log: Logger;
  private readonly stopper = new AbortController();
  private current: AbortController | undefined;
  private abortRequested = false;
  private resourceVersion = '';
  private syncedOnce = false;
  private syncWaiters: Array<() => void> = [];
  private loop: Promise<void> | undefined;
  /** How many (re)lists have completed; tests and metrics read it. */
  listCount = 0;
  /** How many watch requests have been opened. */
  watchCount = 0;

  constructor(private readonly opts: InformerOptions<R>) {
    this.log = opts.logger.child({ component: 'informer', resource: opts.resource });
  }

  get synced(): boolean {
    return this.syncedOnce;
  }

  get lastResourceVersion(): string {
    return this.resourceVersion;
  }

  get resource(): string {
    return this.opts.resource;
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    this.current?.abort();
    await this.loop;
  }

  /** Resolves after the first list has been applied. */
  waitForSync(): Promise<void> {
    if (this.syncedOnce) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  /** Cuts the current watch connection (as a network failure would); the informer resumes it. */
  abortWatch(): boolean {
    if (!this.current) return false;
    this.abortRequested = true;
    this.current.abort();
    return true;
  }

  private get stopped(): boolean {
    return this.stopper.signal.aborted;
  }

  private async run(): Promise<void> {
    const backoff = new Backoff(this.opts.backoff ?? { initialMs: 500, maxMs: 30_000 });
    const maxMs = (this.opts.backoff ?? { maxMs: 30_000 }).maxMs;
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) {
          const listed = await this.list();
          if (!listed) {
            // optional API missing: retry the list later
            await sleep(maxMs, this.stopper.signal);
            continue;
          }
          needList = false;
        }
        const end = await this.watchOnce();
        backoff.reset();
        if (this.stopped) break;
        this.opts.hooks?.onRestart?.(this.opts.resource, end);
        if (end === 'expired') {
          this.log.info({ resourceVersion: this.resourceVersion }, 'watch expired (410 Gone): relisting');
          needList = true;
        } else {
          this.log.debug({ reason: end, resourceVersion: this.resourceVersion }, 'watch ended: resuming');
        }
      } catch (err) {
        if (this.stopped) break;
        this.opts.hooks?.onRestart?.(this.opts.resource, 'error');
        const delay = backoff.next();
        const throttled = err instanceof KubeApiError && err.statusCode === 429;
        this.log.warn(
          { err: (err as Error).message, retryInMs: delay },
          throttled ? 'API server is throttling us: serving from the cache and retrying' : 'watch failed: retrying',
        );
        await sleep(delay, this.stopper.signal);
      }
    }
  }

  /**
   * Lists every page; resets the handler. Returns false when an optional API is missing. Each page is
   * turned into records as it arrives, so only one page of whole objects is held at a time (holding a
   * 5,000-pod list whole before transforming it grew the heap, and a V8 heap keeps what it grew to).
   */
  private async list(): Promise<boolean> {
    const records: R[] = [];
    let cont = '';
    let rv = '';
    const limit = this.opts.pageSize ?? 500;
    const selectors =
      (this.opts.labelSelector ? `&labelSelector=${encodeURIComponent(this.opts.labelSelector)}` : '') +
      (this.opts.fieldSelector ? `&fieldSelector=${encodeURIComponent(this.opts.fieldSelector)}` : '');
    do {
      const query = `?limit=${limit}${selectors}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
      const res = await this.opts.client.request<{ items?: unknown[] } & Meta>('GET', this.opts.path + query);
      if (res.status === 404 && this.opts.optional) {
        if (!this.syncedOnce)
          this.log.warn(
            { path: this.opts.path },
            'API not found (is the CRD installed?): treating as empty and retrying',
          );
        this.opts.handler.reset([]);
        this.markSynced();
        return false;
      }
      if (res.status === 410 && cont !== '') {
        cont = '';
        records.length = 0;
        continue; // the continue token expired: list again from the start
      }
      if (res.status !== 200)
        throw new KubeApiError(
          'GET',
          this.opts.path,
          res.status,
          (res.body as { message?: string } | undefined)?.message ?? '',
        );
      for (const item of res.body.items ?? []) {
        records.push(this.opts.transform(item));
        if (this.opts.shortName) this.log.debug(`Adding ${this.opts.shortName} ${this.opts.keyOf(item)}`);
      }
      rv = res.body.metadata?.resourceVersion ?? '';
      cont = res.body.metadata?.continue ?? '';
    } while (cont !== '');
    this.opts.handler.reset(records);
    this.resourceVersion = rv;
    this.listCount++;
    this.log.info({ count: records.length, resourceVersion: rv, relist: this.listCount > 1 }, 'caches synced');
    this.markSynced();
    return true;
  }

  private markSynced(): void {
    if (!this.syncedOnce) {
      this.syncedOnce = true;
      this.opts.hooks?.onSynced?.(this.opts.resource);
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  /** Applies one event; returns 'expired' for a 410 ERROR event. */
  private handle(type: WatchEventType, obj: unknown): 'expired' | undefined {
    const rv = (obj as Meta | undefined)?.metadata?.resourceVersion;
    switch (type) {
      case 'ADDED':
      case 'MODIFIED':
        if (this.opts.shortName)
          this.log.debug(`${type === 'ADDED' ? 'Adding' : 'Updating'} ${this.opts.shortName} ${this.opts.keyOf(obj)}`);
        this.opts.handler.apply(this.opts.transform(obj));
        break;
      case 'DELETED':
        if (this.opts.shortName) this.log.debug(`Deleting ${this.opts.shortName} ${this.opts.keyOf(obj)}`);
        this.opts.handler.delete(this.opts.keyOf(obj));
        break;
      case 'BOOKMARK':
        break;
      case 'ERROR': {
        const code = (obj as { code?: number } | undefined)?.code;
        if (code === 410) return 'expired';
        throw new KubeApiError(
          'WATCH',
          this.opts.path,
          code ?? 0,
          (obj as { message?: string } | undefined)?.message ?? 'watch error event',
        );
      }
      default:
        return undefined;
    }
    if (rv) this.resourceVersion = rv;
    return undefined;
  }

  private async watchOnce(): Promise<'ended' | 'expired' | 'aborted'> {
    const timeoutSeconds = this.opts.timeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
    this.watchCount++;
    const controller = new AbortController();
    this.current = controller;
    if (this.stopped) controller.abort();
    let expired = false;
    // A connection that dies silently never ends: if nothing (not even a bookmark) arrives for
    // well past the server-side timeout, cut it and start again from the last version.
    let watchdog: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(watchdog);
      watchdog = setTimeout(
        () => {
          this.log.warn({ silentForSeconds: timeoutSeconds + 60 }, 'watch silent past its timeout: reconnecting');
          controller.abort();
        },
        (timeoutSeconds + 60) * 1000,
      );
      watchdog.unref();
    };
    arm();
    try {
      const end = await this.opts.client.watch(
        this.opts.path,
        {
          allowWatchBookmarks: true,
          resourceVersion: this.resourceVersion,
          timeoutSeconds,
          ...(this.opts.labelSelector ? { labelSelector: this.opts.labelSelector } : {}),
          ...(this.opts.fieldSelector ? { fieldSelector: this.opts.fieldSelector } : {}),
        },
        (type, obj) => {
          arm();
          if (expired) return;
          if (this.handle(type, obj) === 'expired') {
            expired = true;
            controller.abort();
          }
        },
        { signal: controller.signal },
      );
      if (expired) return 'expired';
      const aborted = this.abortRequested || this.stopped;
      return end === 'aborted' || aborted ? 'aborted' : 'ended';
    } catch (err) {
      if (expired) return 'expired';
      if (err instanceof KubeApiError && err.statusCode === 410) return 'expired';
      if (this.abortRequested || this.stopped) return 'aborted';
      throw err;
    } finally {
      clearTimeout(watchdog);
      this.current = undefined;
      this.abortRequested = false;
    }
  }
}

/** A handler that keeps the records by key: for programs that look objects up (the injector's namespaces). */
export class InformerStore<R> implements InformerHandler<R> {
  private readonly items = new Map<string, R>();

  constructor(private readonly keyOfRecord: (r: R) => string) {}

  apply(record: R): void {
    this.items.set(this.keyOfRecord(record), record);
  }

  delete(key: string): void {
    this.items.delete(key);
  }

  reset(records: R[]): void {
    this.items.clear();
    for (const r of records) this.apply(r);
  }

  get(key: string): R | undefined {
    return this.items.get(key);
  }

  list(): R[] {
    return [...this.items.values()];
  }

  get size(): number {
    return this.items.size;
  }
}
