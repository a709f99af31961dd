// Writes route statuses (route-status.ts computes them) and EgressNetwork statuses (egress-status.ts)
// while this replica leads. Every replica
// computes the same answers from the same watches; only the holder of the status Lease writes, as
// Linkerd's policy controller does. A pass runs soon after any index change and every `resyncMs`
// (a failed or lost write is made again); each write is a JSON merge patch of status.parents on the
// status subresource with the route's resourceVersion as precondition, so a route that changed
// meanwhile answers 409 and is looked at again once the watch delivers it.
import type { KubeClient } from '@minimesh/kube';
import type { Logger } from '@minimesh/runtime';
import type { PolicyIndex } from '../index/policy-index.js';
import { ROUTE_KINDS, type IndexedKind } from '../index/store.js';
import type { PolicyMetrics } from '../metrics.js';
import { egressStatusPath, egressStatusUpdates } from './egress-status.js';
import { routeStatusUpdates, statusPath, type RouteStatusUpdate } from './route-status.js';

/**
 * The kinds route and EgressNetwork statuses are computed from (route-status.ts, egress-status.ts and
 * the verdicts of index/route-attachment.ts read routes, Services, Servers and EgressNetworks only). A
 * change to any other kind (a pod above all) cannot change a status: it makes no pass. Every pod event
 * used to make one, over every route of the cluster (docs/policy.md, "At scale").
 */
export const STATUS_INPUT_KINDS: ReadonlySet<IndexedKind> = new Set<IndexedKind>([
  ...ROUTE_KINDS,
  'Service',
  'Server',
  'EgressNetwork',
]);

export interface RouteStatusWriterOptions {
  api: KubeClient;
  index: PolicyIndex;
  logger: Logger;
  metrics?: Pick<PolicyMetrics, 'statusPatches'>;
  /** Whether this replica may write now (holds the Lease). */
  isLeader: () => boolean;
  /** A full pass at least this often while leading (default 10 s). */
  resyncMs?: number;
  /** How long after a change the pass runs, so a burst of changes makes one pass (default 50 ms). */
  debounceMs?: number;
  now?: () => Date;
}

export class RouteStatusWriter {
  private readonly log: Logger;
  private timer: NodeJS.Timeout | undefined;
  private resync: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private again = false;
  private stopped = false;
  /** Writes sent and not yet seen back through the watch: key → resourceVersion + what was sent. */
  private readonly sent = new Map<string, { resourceVersion: string | undefined; body: string }>();

  constructor(private readonly opts: RouteStatusWriterOptions) {
    this.log = opts.logger.child({ component: 'route-status' });
  }

  start(): void {
    if (this.stopped) return;
    const every = this.opts.resyncMs ?? 10_000;
    this.resync = setInterval(() => this.notify(0), every);
    this.resync.unref();
    this.notify(0);
  }

  /** The index changed objects of `kind`: a pass soon when statuses are computed from that kind. */
  indexChanged(kind: IndexedKind): void {
    if (STATUS_INPUT_KINDS.has(kind)) this.notify();
  }

  /** Something changed (or leadership came): run a pass soon. */
  notify(delayMs = this.opts.debounceMs ?? 50): void {
    if (this.stopped || !this.opts.isLeader()) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.pass().finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.notify();
        }
      });
    }, delayMs);
  }

  /** Leadership changed: a new leader writes everything that differs at once; a former one forgets. */
  leadershipChanged(leading: boolean): void {
    if (leading) this.notify(0);
    else this.sent.clear();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.resync);
    await this.running;
  }

  /** One pass: every route whose status differs gets one write. Resolves when the writes are done. */
  async pass(): Promise<number> {
    const now = (this.opts.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    let written = 0;
    for (const kind of ROUTE_KINDS) {
      for (const u of routeStatusUpdates(this.opts.index.store, kind, now)) {
        if (this.stopped || !this.opts.isLeader()) return written;
        if (await this.write(u)) written++;
      }
    }
    for (const u of egressStatusUpdates(this.opts.index.store, now)) {
      if (this.stopped || !this.opts.isLeader()) return written;
      const sent = await this.send({
        key: `EgressNetwork/${u.namespace}/${u.name}`,
        path: egressStatusPath(u.namespace, u.name),
        resourceVersion: u.resourceVersion,
        status: { conditions: u.conditions },
        summary: u.ours.map((c) => `${c.type}=${c.status} ${c.reason}`),
        what: 'EgressNetwork status',
      });
      if (sent) written++;
    }
    return written;
  }

  private write(u: RouteStatusUpdate): Promise<boolean> {
    return this.send({
      key: `${u.kind}/${u.namespace}/${u.name}`,
      path: statusPath(u.kind, u.namespace, u.name),
      resourceVersion: u.resourceVersion,
      status: { parents: u.parents },
      summary: u.ours.map(
        (p) => `${p.parentRef.name}: ${p.conditions.map((c) => `${c.type}=${c.status} ${c.reason}`).join(', ')}`,
      ),
      what: 'route status',
    });
  }

  private async send(u: {
    key: string;
    path: string;
    resourceVersion: string | undefined;
    status: unknown;
    summary: string[];
    what: string;
  }): Promise<boolean> {
    const key = u.key;
    const body = JSON.stringify({
      metadata: u.resourceVersion ? { resourceVersion: u.resourceVersion } : {},
      status: u.status,
    });
    const last = this.sent.get(key);
    // Sent already for this version: the watch has not shown the result yet.
    if (last && last.resourceVersion === u.resourceVersion && last.body === body) return false;
    const what = { [u.what === 'route status' ? 'route' : 'egressNetwork']: key, resourceVersion: u.resourceVersion };
    try {
      const res = await this.opts.api.request('PATCH', u.path, body, {
        contentType: 'application/merge-patch+json',
        timeoutMs: 10_000,
      });
      if (res.status >= 200 && res.status < 300) {
        this.sent.set(key, { resourceVersion: u.resourceVersion, body });
        this.opts.metrics?.statusPatches.inc({ result: 'ok' });
        this.log.info({ ...what, conditions: u.summary }, `wrote ${u.what}`);
        return true;
      }
      this.sent.delete(key);
      if (res.status === 409 || res.status === 404) {
        // Changed or deleted meanwhile: the watch brings the new state, and the next pass looks again.
        this.opts.metrics?.statusPatches.inc({ result: 'conflict' });
        this.log.debug({ ...what, status: res.status }, `object changed before its ${u.what} was written`);
        return false;
      }
      this.opts.metrics?.statusPatches.inc({ result: 'error' });
      this.log.warn(
        { ...what, status: res.status, message: (res.body as { message?: string } | undefined)?.message },
        `could not write ${u.what} (tried again on the next pass)`,
      );
    } catch (err) {
      this.sent.delete(key);
      this.opts.metrics?.statusPatches.inc({ result: 'error' });
      this.log.warn(
        { ...what, err: (err as Error).message },
        `could not write ${u.what} (tried again on the next pass)`,
      );
    }
    return false;
  }
}
