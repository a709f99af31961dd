// Discovery: destination Get streams (by authority) and GetProfile streams (by IP:port), cached and shared
// by every connection of this proxy, dropped after a period without use (Linkerd: 5 s outbound).
// When destination is down the last known endpoints stay in use and the stream reconnects with backoff.
import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import type { destination } from '@minimesh/proto';
import { fromTcpAddress, toTcpAddress } from '@minimesh/proto';
import { backoffDelay, type Logger } from '@minimesh/runtime';
import { DEFAULT_PEAK_EWMA, PeakEwma, type PeakEwmaOptions } from '../balance/p2c-peak-ewma.js';
import { keyOf, type Endpoint } from '../targets.js';

export type { Endpoint };

export type ResolutionState = 'pending' | 'ready' | 'missing' | 'unavailable';

export class EndpointSet {
  readonly byKey = new Map<string, Endpoint>();
  list: Endpoint[] = [];
  state: ResolutionState = 'pending';
  lastUsed = Date.now();
  private waiters: Array<() => void> = [];

  constructor(readonly authority: string) {}

  rebuild(): void {
    this.list = [...this.byKey.values()];
  }

  settle(state: ResolutionState): void {
    this.state = state;
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  wait(timeoutMs: number): Promise<void> {
    if (this.state !== 'pending') return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        if (this.state === 'pending') this.settle('unavailable');
        resolve();
      }, timeoutMs);
      this.waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }
}

export interface Profile {
  fullyQualifiedName: string;
  opaqueProtocol: boolean;
  endpoint: Endpoint | undefined;
}

interface ProfileEntry {
  profile: Profile | undefined;
  state: ResolutionState;
  lastUsed: number;
  waiters: Array<() => void>;
  stream: ClientReadableStream<destination.DestinationProfile> | undefined;
  closed: boolean;
  attempt: number;
}

interface SetEntry {
  set: EndpointSet;
  stream: ClientReadableStream<destination.Update> | undefined;
  closed: boolean;
  attempt: number;
  resync: boolean;
}

export interface ResolverOptions {
  /** Returns the current client (it may be replaced when credentials change). */
  client: () => destination.DestinationClient;
  contextToken: string;
  idleMs: number;
  /** How long a first lookup waits for destination before falling back (ms). */
  firstUpdateTimeoutMs: number;
  logger: Logger;
  ewma?: PeakEwmaOptions;
  /** Reconnect backoff bounds. */
  backoff?: { minMs: number; maxMs: number };
}

/** gRPC statuses meaning "this name is not ours to resolve": fall back to the original destination. */
const NOT_RESOLVABLE = new Set([3 /* INVALID_ARGUMENT */, 5 /* NOT_FOUND */]);

export class DestinationResolver {
  private readonly sets = new Map<string, SetEntry>();
  private readonly profiles = new Map<string, ProfileEntry>();
  private readonly sweep: NodeJS.Timeout;
  private readonly log: Logger;
  private readonly backoff: { minMs: number; maxMs: number };

  constructor(private readonly opts: ResolverOptions) {
    this.log = opts.logger;
    this.backoff = opts.backoff ?? { minMs: 250, maxMs: 10_000 };
    this.sweep = setInterval(() => this.dropIdle(), Math.max(100, Math.min(1000, opts.idleMs / 2)));
    this.sweep.unref();
  }

  /** The endpoint set of an authority when its stream already answered (no wait, no promise): the hot path. */
  peekSet(authority: string): EndpointSet | undefined {
    const e = this.sets.get(authority);
    if (!e || e.set.state === 'pending') return undefined;
    e.set.lastUsed = Date.now();
    return e.set;
  }

  /** The endpoint set of an authority ("name:port"), waiting for the first update when it is new. */
  async resolve(authority: string): Promise<EndpointSet> {
    let e = this.sets.get(authority);
    if (!e) {
      e = { set: new EndpointSet(authority), stream: undefined, closed: false, attempt: 0, resync: false };
      this.sets.set(authority, e);
      this.openGet(e);
    }
    e.set.lastUsed = Date.now();
    if (e.set.state === 'pending') await e.set.wait(this.opts.firstUpdateTimeoutMs);
    return e.set;
  }

  /** The profile of an IP:port (ClusterIP → fully_qualified_name; pod IP → endpoint). */
  async profile(ip: string, port: number): Promise<Profile | undefined> {
    const key = keyOf(ip, port);
    let e = this.profiles.get(key);
    if (!e) {
      e = {
        profile: undefined,
        state: 'pending',
        lastUsed: Date.now(),
        waiters: [],
        stream: undefined,
        closed: false,
        attempt: 0,
      };
      this.profiles.set(key, e);
      this.openProfile(key, e);
    }
    e.lastUsed = Date.now();
    const entry = e;
    if (entry.state === 'pending') {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          if (entry.state === 'pending') entry.state = 'unavailable';
          resolve();
        }, this.opts.firstUpdateTimeoutMs);
        entry.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return entry.profile;
  }

  /** Number of open streams (for tests and /metrics). */
  get streams(): { get: number; profile: number } {
    return { get: this.sets.size, profile: this.profiles.size };
  }

  close(): void {
    clearInterval(this.sweep);
    for (const e of this.sets.values()) this.cancel(e);
    for (const e of this.profiles.values()) {
      e.closed = true;
      e.stream?.cancel();
    }
    this.sets.clear();
    this.profiles.clear();
  }

  private cancel(e: SetEntry): void {
    e.closed = true;
    e.stream?.cancel();
  }

  private dropIdle(): void {
    const now = Date.now();
    for (const [k, e] of this.sets) {
      if (now - e.set.lastUsed > this.opts.idleMs) {
        this.cancel(e);
        this.sets.delete(k);
        this.log.debug({ authority: k }, 'discovery idle: stream dropped');
      }
    }
    for (const [k, e] of this.profiles) {
      if (now - e.lastUsed > this.opts.idleMs) {
        e.closed = true;
        e.stream?.cancel();
        this.profiles.delete(k);
      }
    }
  }

  private delay(attempt: number): number {
    return backoffDelay(attempt, { initialMs: this.backoff.minMs, maxMs: this.backoff.maxMs, jitter: 0.5 });
  }

  private openGet(e: SetEntry): void {
    if (e.closed) return;
    let stream: ClientReadableStream<destination.Update>;
    try {
      stream = this.opts.client().get({ scheme: 'k8s', path: e.set.authority, contextToken: this.opts.contextToken });
    } catch (err) {
      this.log.warn({ err, authority: e.set.authority }, 'destination Get failed to start');
      this.retryGet(e);
      return;
    }
    e.stream = stream;
    // grpc-js ends a failed call's stream AND emits its error: one failure, one retry. (Retrying on
    // both doubled the streams at every round: 2,502 Gets in 1.5 s against a destination refusing
    // them, and a proxy OOM-killed on the cluster when destination hit its per-client stream limit.)
    let retried = false;
    const retryOnce = () => {
      if (retried) return;
      retried = true;
      this.retryGet(e);
    };
    stream.on('data', (u: destination.Update) => {
      e.attempt = 0;
      this.applyUpdate(e, u);
    });
    stream.on('error', (err: ServiceError) => {
      if (e.closed || err.code === 1 /* CANCELLED */) return;
      if (NOT_RESOLVABLE.has(err.code)) {
        this.log.debug(
          { authority: e.set.authority, code: err.code, details: err.details },
          'destination does not resolve this name',
        );
        e.set.byKey.clear();
        e.set.rebuild();
        e.set.settle('missing');
        return;
      }
      this.log.warn(
        { authority: e.set.authority, code: err.code, details: err.details },
        'destination stream failed; keeping last known endpoints and reconnecting',
      );
      if (e.set.state === 'pending') e.set.settle('unavailable');
      retryOnce();
    });
    stream.on('end', () => {
      if (e.closed) return;
      retryOnce();
    });
  }

  private retryGet(e: SetEntry): void {
    if (e.closed) return;
    e.resync = true;
    const t = setTimeout(() => this.openGet(e), this.delay(e.attempt++));
    t.unref();
  }

  private applyUpdate(e: SetEntry, u: destination.Update): void {
    const set = e.set;
    const upd = u.update;
    if (!upd) return;
    if (e.resync) {
      // A reconnected stream starts with a full snapshot: forget what we knew.
      e.resync = false;
      set.byKey.clear();
    }
    if (upd.$case === 'add') {
      for (const wa of upd.value.addrs) {
        const ep = this.toEndpoint(wa, upd.value.metricLabels);
        if (!ep) continue;
        const old = set.byKey.get(ep.key);
        if (old) ep.load = old.load;
        set.byKey.set(ep.key, ep);
      }
    } else if (upd.$case === 'remove') {
      for (const a of upd.value.addrs) {
        const t = fromTcpAddress(a);
        if (t) set.byKey.delete(keyOf(t.ip, t.port));
      }
    } else if (upd.$case === 'noEndpoints') {
      set.byKey.clear();
      if (!upd.value.exists) {
        set.rebuild();
        set.settle('missing');
        return;
      }
    }
    set.rebuild();
    set.settle('ready');
  }

  toEndpoint(wa: destination.WeightedAddr, setLabels: Record<string, string> = {}): Endpoint | undefined {
    const t = fromTcpAddress(wa.addr);
    if (!t) return undefined;
    const strat = wa.tlsIdentity?.strategy;
    const identity = strat?.$case === 'dnsLikeIdentity' ? strat.value.name : undefined;
    const proto = wa.protocolHint?.protocol?.$case;
    return {
      key: keyOf(t.ip, t.port),
      ip: t.ip,
      port: t.port,
      identity: identity || undefined,
      hint: proto === 'h2' ? 'h2' : proto === 'opaque' ? 'opaque' : undefined,
      labels: { ...setLabels, ...wa.metricLabels },
      weight: wa.weight,
      load: new PeakEwma(this.opts.ewma ?? DEFAULT_PEAK_EWMA),
      discovered: true,
    };
  }

  private openProfile(key: string, e: ProfileEntry): void {
    if (e.closed) return;
    const settle = (state: ResolutionState) => {
      e.state = state;
      const w = e.waiters;
      e.waiters = [];
      for (const f of w) f();
    };
    let stream: ClientReadableStream<destination.DestinationProfile>;
    try {
      stream = this.opts.client().getProfile({ scheme: 'k8s', path: key, contextToken: this.opts.contextToken });
    } catch (err) {
      this.log.warn({ err, target: key }, 'destination GetProfile failed to start');
      return;
    }
    e.stream = stream;
    stream.on('data', (p: destination.DestinationProfile) => {
      e.attempt = 0;
      e.profile = {
        fullyQualifiedName: p.fullyQualifiedName.replace(/\.$/, ''),
        opaqueProtocol: p.opaqueProtocol,
        endpoint: p.endpoint ? this.toEndpoint(p.endpoint) : undefined,
      };
      settle('ready');
    });
    let retried = false;
    const retry = () => {
      // One retry per call, whether it ended, failed, or both (see openGet).
      if (e.closed || retried) return;
      retried = true;
      const t = setTimeout(() => this.openProfile(key, e), this.delay(e.attempt++));
      t.unref();
    };
    stream.on('error', (err: ServiceError) => {
      if (e.closed || err.code === 1) return;
      if (NOT_RESOLVABLE.has(err.code)) {
        e.profile = undefined;
        settle('missing');
        return;
      }
      if (e.state === 'pending') settle('unavailable');
      retry();
    });
    stream.on('end', retry);
  }
}

export { keyOf, toTcpAddress };
