// Leader election with a coordination.k8s.io/v1 Lease, the way client-go's leaderelection does it:
// candidates try every retryPeriod; a lease is taken over only after its holder has not renewed it
// for leaseDuration (measured on our own clock, never the holder's); the leader renews every
// retryPeriod and steps down when it could not renew within renewDeadline; stop() releases it.
//
// Where this differs from client-go: client-go counts the duration from when it first saw a renewal,
// up to a retry period after the renewal happened, and then looks again only every retry period, so an
// unreleased lease changes hands between duration and duration + 2 retry periods after its last
// renewal (30-34 s with the defaults). Here a renewal seen between two reads is dated to the first of
// them (it happened after that read saw the old value; at most a retry period back, and never more than
// leaseDuration - renewDeadline - retryPeriod, so a holder that is alive but cut off has stepped down
// first), and the candidate reads again exactly when that lease runs out: the takeover lands within
// the lease duration of the last renewal plus one request.
import type { Logger } from '@minimesh/runtime';
import type { KubeClient } from './client.js';

export interface LeaseElectorOptions {
  api: KubeClient;
  namespace: string;
  name: string;
  /** The holder identity: the pod name. */
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logger: Logger;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  onNewLeader?: (identity: string) => void;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** Kubernetes MicroTime: RFC 3339 with exactly six fractional digits. */
export function toMicroTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaseElector {
  private readonly log: Logger;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private observed: { holder: string; renewTime: string; at: number } | undefined;
  /** When the last read of the lease was sent (a change seen by the next read happened after it). */
  private lastReadSentAt: number | undefined;
  /** Set by a round that saw another holder's lease: when it runs out on our clock. */
  private expiresAt: number | undefined;
  private lastRenew = 0;
  private lastLeader = '';
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly opts: LeaseElectorOptions) {
    this.log = opts.logger.child({
      component: 'leader',
      lease: `${opts.namespace}/${opts.name}`,
      identity: opts.identity,
    });
  }

  get isLeader(): boolean {
    return this.leading;
  }

  private get path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.opts.namespace}/leases`;
  }

  start(): void {
    this.log.info('leader election started');
    this.tick();
  }

  /** Stops competing; the leader releases the lease so another replica takes over at once. */
  async stop(opts: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    // A leader that stepped down after missed renewals may still be named in the lease (nobody took it
    // over): release it too, or the next replica waits out the whole lease duration.
    const named = this.leading || this.observed?.holder === this.opts.identity;
    if (named && (opts.release ?? true)) await this.release();
    this.setLeading(false);
  }

  private tick(): void {
    if (this.stopped) return;
    this.running = this.round().finally(() => {
      if (this.stopped) return;
      // A candidate waiting on another holder's lease reads it again the moment it runs out.
      const untilExpiry = this.expiresAt === undefined ? Infinity : Math.max(0, this.expiresAt - Date.now());
      this.timer = setTimeout(() => this.tick(), Math.min(this.opts.retryPeriodMs, untilExpiry));
    });
  }

  private async round(): Promise<void> {
    let ok = false;
    try {
      ok = await this.tryAcquireOrRenew();
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'lease request failed');
    }
    if (this.stopped) return;
    if (ok) {
      this.lastRenew = Date.now();
      this.setLeading(true);
    } else if (this.leading && Date.now() - this.lastRenew > this.opts.renewDeadlineMs) {
      this.log.warn({ renewDeadlineMs: this.opts.renewDeadlineMs }, 'could not renew the lease in time: stepping down');
      this.setLeading(false);
    }
  }

  private setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    if (leading) {
      this.log.info('became leader');
      this.opts.onStartedLeading();
    } else {
      this.log.info('stopped leading');
      this.opts.onStoppedLeading();
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { api, name, identity } = this.opts;
    const now = new Date();
    const durationSeconds = Math.max(1, Math.round(this.opts.leaseDurationMs / 1000));
    const timeoutMs = Math.max(1000, Math.min(this.opts.renewDeadlineMs, 10_000));
    this.expiresAt = undefined;
    const previousReadSentAt = this.lastReadSentAt;
    this.lastReadSentAt = now.getTime();
    const got = await api.request<Lease>('GET', `${this.path}/${name}`, undefined, { timeoutMs });
    if (got.status === 404) {
      const lease: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace: this.opts.namespace },
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: toMicroTime(now),
          renewTime: toMicroTime(now),
          leaseTransitions: 0,
        },
      };
      const created = await api.request('POST', this.path, lease, { timeoutMs });
      if (created.status === 201 || created.status === 200) {
        this.observed = { holder: identity, renewTime: lease.spec?.renewTime ?? '', at: Date.now() };
        this.noteLeader(identity);
        return true;
      }
      if (created.status !== 409) this.log.warn({ status: created.status }, 'could not create the lease');
      return false;
    }
    if (got.status !== 200) {
      this.log.warn(
        { status: got.status, message: (got.body as { message?: string } | undefined)?.message },
        'could not read the lease',
      );
      return false;
    }
    const lease = got.body;
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const renewTime = spec.renewTime ?? '';
    const leaseMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (!this.observed || this.observed.holder !== holder || this.observed.renewTime !== renewTime) {
      this.observed = { holder, renewTime, at: this.renewalSeenAt(previousReadSentAt, leaseMs) };
    }
    this.noteLeader(holder);
    const heldByOther = holder !== '' && holder !== identity;
    if (heldByOther && this.observed.at + leaseMs > Date.now()) {
      this.expiresAt = this.observed.at + leaseMs;
      return false;
    }
    const next: Lease = {
      ...lease,
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: holder === identity && spec.acquireTime ? spec.acquireTime : toMicroTime(now),
        renewTime: toMicroTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (holder === identity ? 0 : 1),
      },
    };
    const put = await api.request<Lease>('PUT', `${this.path}/${name}`, next, { timeoutMs });
    if (put.status === 200) {
      this.observed = { holder: identity, renewTime: next.spec?.renewTime ?? '', at: Date.now() };
      if (heldByOther) this.log.info({ previous: holder }, 'took over the lease');
      this.noteLeader(identity);
      return true;
    }
    if (put.status !== 409)
      this.log.warn(
        { status: put.status, message: (put.body as { message?: string } | undefined)?.message },
        'could not update the lease',
      );
    return false;
  }

  /**
   * When a renewal just seen is taken to have happened, on our clock: after the previous read (which
   * saw the old value), if that read was recent; never earlier than a retry period back, nor than the
   * margin between the lease duration and the holder's renew deadline allows; now when there was no
   * previous read to bound it (the first read of a lease, or a read long ago).
   */
  private renewalSeenAt(previousReadSentAt: number | undefined, leaseMs: number): number {
    const now = Date.now();
    if (previousReadSentAt === undefined) return now;
    const allowance = Math.min(
      now - previousReadSentAt,
      this.opts.retryPeriodMs,
      Math.max(0, leaseMs - this.opts.renewDeadlineMs - this.opts.retryPeriodMs),
    );
    return now - Math.max(0, allowance); // Date.now() can step back
  }

  private noteLeader(holder: string): void {
    if (holder === this.lastLeader) return;
    this.lastLeader = holder;
    if (holder !== '') {
      this.log.info({ leader: holder }, 'new leader observed');
      this.opts.onNewLeader?.(holder);
    }
  }

  /**
   * Clears holderIdentity if the lease still names us. A shutdown is the one moment this must not be
   * lost to one slow or failed request, so it tries a few times (a 409 means the lease changed under
   * us: read it again).
   */
  private async release(attempts = 4): Promise<void> {
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let why: string;
      try {
        const got = await this.opts.api.request<Lease>('GET', `${this.path}/${this.opts.name}`, undefined, {
          timeoutMs: 5000,
        });
        if (got.status === 404) return;
        if (got.status === 200 && got.body.spec?.holderIdentity !== this.opts.identity) return;
        if (got.status === 200) {
          const now = toMicroTime(new Date());
          const released: Lease = {
            ...got.body,
            spec: { ...got.body.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
          };
          const put = await this.opts.api.request('PUT', `${this.path}/${this.opts.name}`, released, {
            timeoutMs: 5000,
          });
          if (put.status === 200) {
            this.log.info('released the lease');
            return;
          }
          why = `update answered ${put.status}`;
        } else why = `read answered ${got.status}`;
      } catch (err) {
        why = (err as Error).message;
      }
      this.log.warn({ attempt, attempts, err: why }, 'could not release the lease');
      if (attempt < attempts) await new Promise((r) => setTimeout(r, 250 * attempt));
    }
  }
}
