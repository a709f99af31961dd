// A small informer: list (with resourceVersion), then watch=true&allowWatchBookmarks=true from that
// version; a watch that ends is resumed where it left off; 410 Gone (or an expired version) relists
// and resets the handler from the fresh list, so nothing stale survives; errors back off and retry.
// Objects are transformed into small records before they reach the handler. Handlers are
// synchronous and must not block.
import type { Logger } from '@minimesh/runtime';
import type { ApiClient } from './api-client.js';
import type { DestinationMetrics } from '../metrics.js';
import { ApiRequestError } from '../errors.js';

export interface InformerHandler<R> {
  apply(record: R): void;
  delete(key: string): void;
  reset(records: R[]): void;
}

export interface InformerOptions<R> {
  api: ApiClient;
  /** Resource name for logs and metrics, e.g. "endpointslices". */
  resource: string;
  /** Collection path, e.g. "/apis/discovery.k8s.io/v1/endpointslices". */
  path: string;
  transform: (obj: unknown) => R;
  keyOf: (obj: unknown) => string;
  handler: InformerHandler<R>;
  logger: Logger;
  metrics?: Pick<DestinationMetrics, 'watchRestarts' | 'cacheSynced'>;
  /** Server-side watch timeout; default a random 300-600 s so replicas do not reconnect in step. */
  timeoutSeconds?: number;
  /** Retry backoff after errors: doubles from initialMs to maxMs. */
  backoff?: { initialMs: number; maxMs: number };
  /** Short name for per-object debug lines ("Adding ES ns/name"). */
  shortName?: string;
  /** A missing API (404, e.g. a CRD not installed yet) counts as an empty, synced list, retried later. */
  optional?: boolean;
  /** Page size of list requests. */
  pageSize?: number;
}

export type WatchEnd = 'ended' | 'expired' | 'aborted';

type Meta = { metadata?: { resourceVersion?: string; continue?: string; namespace?: string; name?: string } };

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

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
    const backoff = this.opts.backoff ?? { initialMs: 500, maxMs: 30_000 };
    let delay = backoff.initialMs;
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) {
          const listed = await this.list();
          if (!listed) {
            // optional API missing: retry the list later
            await sleep(backoff.maxMs, this.stopper.signal);
            continue;
          }
          needList = false;
        }
        const end = await this.watchOnce();
        delay = backoff.initialMs;
        if (this.stopped) break;
        this.opts.metrics?.watchRestarts.inc({ resource: this.opts.resource, reason: end });
        if (end === 'expired') {
          this.log.info({ resourceVersion: this.resourceVersion }, 'watch expired (410 Gone): relisting');
          needList = true;
        } else {
          this.log.debug({ reason: end, resourceVersion: this.resourceVersion }, 'watch ended: resuming');
        }
      } catch (err) {
        if (this.stopped) break;
        this.opts.metrics?.watchRestarts.inc({ resource: this.opts.resource, reason: 'error' });
        this.log.warn({ err: (err as Error).message, retryInMs: delay }, 'watch failed: retrying');
        await sleep(delay, this.stopper.signal);
        delay = Math.min(delay * 2, backoff.maxMs);
      }
    }
  }

  /** Lists every page; resets the handler. Returns false when an optional API is missing. */
  private async list(): Promise<boolean> {
    const items: unknown[] = [];
    let cont = '';
    let rv = '';
    const limit = this.opts.pageSize ?? 500;
    do {
      const query = `?limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
      const res = await this.opts.api.request<{ items?: unknown[] } & Meta>('GET', this.opts.path + query);
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
        items.length = 0;
        continue; // the continue token expired: list again from the start
      }
      if (res.status !== 200)
        throw new ApiRequestError(
          'GET',
          this.opts.path,
          res.status,
          (res.body as { message?: string } | undefined)?.message ?? '',
        );
      items.push(...(res.body.items ?? []));
      rv = res.body.metadata?.resourceVersion ?? '';
      cont = res.body.metadata?.continue ?? '';
    } while (cont !== '');
    const records: R[] = [];
    for (const item of items) {
      records.push(this.opts.transform(item));
      if (this.opts.shortName) this.log.debug(`Adding ${this.opts.shortName} ${this.opts.keyOf(item)}`);
    }
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
      this.opts.metrics?.cacheSynced.set({ resource: this.opts.resource }, 1);
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  private handle(type: string, obj: unknown): 'expired' | undefined {
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
        throw new ApiRequestError(
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

  private watchOnce(): Promise<WatchEnd> {
    const timeoutSeconds = this.opts.timeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
    this.watchCount++;
    return new Promise<WatchEnd>((resolve, reject) => {
      let outcome: 'expired' | Error | undefined;
      let controller: AbortController | undefined;
      // A connection that dies silently never ends: if nothing (not even a bookmark) arrives for
      // well past the server-side timeout, cut it and start again from the last version.
      let watchdog: NodeJS.Timeout | undefined;
      const arm = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(
          () => {
            this.log.warn({ silentForSeconds: timeoutSeconds + 60 }, 'watch silent past its timeout: reconnecting');
            controller?.abort();
          },
          (timeoutSeconds + 60) * 1000,
        );
        watchdog.unref();
      };
      arm();
      const settle = (err: unknown) => {
        clearTimeout(watchdog);
        this.current = undefined;
        const aborted = this.abortRequested;
        this.abortRequested = false;
        if (outcome === 'expired') return resolve('expired');
        if (outcome instanceof Error) return reject(outcome);
        if (aborted || this.stopped) return resolve('aborted');
        const status = (err as { statusCode?: number } | null)?.statusCode;
        if (status === 410) return resolve('expired');
        if (err) return reject(err instanceof Error ? err : new Error(String(err)));
        resolve('ended');
      };
      this.opts.api.watch
        .watch(
          this.opts.path,
          { allowWatchBookmarks: true, resourceVersion: this.resourceVersion, timeoutSeconds },
          (type: string, obj: unknown) => {
            arm();
            if (outcome !== undefined) return;
            try {
              if (this.handle(type, obj) === 'expired') {
                outcome = 'expired';
                controller?.abort();
              }
            } catch (err) {
              outcome = err as Error;
              controller?.abort();
            }
          },
          settle,
        )
        .then((c) => {
          controller = c;
          if (c.signal.aborted) return;
          this.current = c;
          if (this.stopped) c.abort();
        })
        .catch(settle);
    });
  }
}
