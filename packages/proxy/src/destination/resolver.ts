// Discovery: destination Get streams (by authority) and GetProfile streams (by IP:port), each kept in the
// one watched-stream cache (watch/watch-cache.ts): shared by every connection of this proxy, dropped
// after a period without use (Linkerd: 5 s outbound), reopened with backoff when destination is down,
// the last known endpoints staying in use meanwhile.
import type { ServiceError } from '@grpc/grpc-js';
import type { destination } from '@minimesh/proto';
import { fromTcpAddress, toTcpAddress } from '@minimesh/proto';
import type { Logger } from '@minimesh/runtime';
import { DEFAULT_PEAK_EWMA, PeakEwma, type PeakEwmaOptions } from '../balance/p2c-peak-ewma.js';
import { keyOf, type Endpoint } from '../targets.js';
import { WatchCache } from '../watch/watch-cache.js';

export type { Endpoint };

export type ResolutionState = 'pending' | 'ready' | 'missing' | 'unavailable';

/** A lookup's state and the callers waiting for destination's first answer. */
export class Resolution {
  state: ResolutionState = 'pending';
  private waiters: Array<() => void> = [];

  settle(state: ResolutionState): void {
    this.state = state;
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Resolves once destination answered, or after timeoutMs (then the lookup is 'unavailable'). */
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

/** The endpoints of an authority, changed in place as destination's updates arrive. */
export class EndpointSet extends Resolution {
  readonly byKey = new Map<string, Endpoint>();
  list: Endpoint[] = [];
  /** The next update starts a reconnected stream: a full snapshot that replaces what was known. */
  resync = false;

  constructor(readonly authority: string) {
    super();
  }

  rebuild(): void {
    this.list = [...this.byKey.values()];
  }
}

export interface Profile {
  fullyQualifiedName: string;
  opaqueProtocol: boolean;
  endpoint: Endpoint | undefined;
}

class ProfileResolution extends Resolution {
  profile: Profile | undefined = undefined;
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
const CANCELLED = 1;

export class DestinationResolver {
  private readonly sets: WatchCache<string, EndpointSet, destination.Update>;
  private readonly profiles: WatchCache<string, ProfileResolution, destination.DestinationProfile>;
  private readonly log: Logger;

  constructor(private readonly opts: ResolverOptions) {
    this.log = opts.logger;
    const cache = {
      idleMs: opts.idleMs,
      sweepMs: Math.max(100, Math.min(1000, opts.idleMs / 2)),
      backoff: opts.backoff ?? { minMs: 250, maxMs: 10_000 },
    };
    const request = (path: string) => ({ scheme: 'k8s', path, contextToken: opts.contextToken });
    this.sets = new WatchCache(
      {
        open: (authority) => opts.client().get(request(authority)),
        message: (set, u) => this.applyUpdate(set, u),
        failed: (authority, set, err) => {
          // A cancel we did not ask for ends the call like an end: reopened.
          if (err.code === CANCELLED) return true;
          if (NOT_RESOLVABLE.has(err.code)) {
            this.log.debug(
              { authority, code: err.code, details: err.details },
              'destination does not resolve this name',
            );
            set.byKey.clear();
            set.rebuild();
            set.settle('missing');
            return false;
          }
          this.log.warn(
            { authority, code: err.code, details: err.details },
            'destination stream failed; keeping last known endpoints and reconnecting',
          );
          if (set.state === 'pending') set.settle('unavailable');
          return true;
        },
        openFailed: (authority, err) => this.log.warn({ err, authority }, 'destination Get failed to start'),
        reopening: (set) => (set.resync = true),
        dropped: (authority) => this.log.debug({ authority }, 'discovery idle: stream dropped'),
      },
      cache,
    );
    this.profiles = new WatchCache(
      {
        open: (target) => opts.client().getProfile(request(target)),
        message: (r, p) => {
          r.profile = {
            fullyQualifiedName: p.fullyQualifiedName.replace(/\.$/, ''),
            opaqueProtocol: p.opaqueProtocol,
            endpoint: p.endpoint ? this.toEndpoint(p.endpoint) : undefined,
          };
          r.settle('ready');
        },
        failed: (_target, r, err: ServiceError) => {
          if (err.code === CANCELLED) return true;
          if (NOT_RESOLVABLE.has(err.code)) {
            r.profile = undefined;
            r.settle('missing');
            return false;
          }
          if (r.state === 'pending') r.settle('unavailable');
          return true;
        },
        openFailed: (target, err) => this.log.warn({ err, target }, 'destination GetProfile failed to start'),
      },
      cache,
    );
  }

  /** The endpoint set of an authority when its stream already answered (no wait, no promise): the hot path. */
  peekSet(authority: string): EndpointSet | undefined {
    const set = this.sets.peek(authority);
    return set === undefined || set.state === 'pending' ? undefined : set;
  }

  /** The endpoint set of an authority ("name:port"), waiting for the first update when it is new. */
  async resolve(authority: string): Promise<EndpointSet> {
    const set = this.sets.get(authority, () => new EndpointSet(authority));
    if (set.state === 'pending') await set.wait(this.opts.firstUpdateTimeoutMs);
    return set;
  }

  /** The profile of an IP:port (ClusterIP → fully_qualified_name; pod IP → endpoint). */
  async profile(ip: string, port: number): Promise<Profile | undefined> {
    const r = this.profiles.get(keyOf(ip, port), () => new ProfileResolution());
    if (r.state === 'pending') await r.wait(this.opts.firstUpdateTimeoutMs);
    return r.profile;
  }

  /** Number of open streams (for tests and /metrics). */
  get streams(): { get: number; profile: number } {
    return { get: this.sets.size, profile: this.profiles.size };
  }

  close(): void {
    this.sets.close();
    this.profiles.close();
  }

  private applyUpdate(set: EndpointSet, u: destination.Update): void {
    const upd = u.update;
    if (!upd) return;
    // A reconnected stream starts with a full snapshot (one Add, or NoEndpoints): it replaces which
    // endpoints we knew, but an endpoint it sends again keeps its load estimate and with it its health.
    // A fresh estimate would be "ready", and the balancer would pick an endpoint whose connection just
    // broke (a pod killed while destination was restarting) and fail a request on it.
    let before: Map<string, Endpoint> | undefined;
    if (set.resync) {
      set.resync = false;
      before = new Map(set.byKey);
      set.byKey.clear();
    }
    if (upd.$case === 'add') {
      for (const wa of upd.value.addrs) {
        const key = keyOfAddr(wa.addr);
        if (key === undefined) continue;
        // An endpoint keeps its load estimate across updates.
        const ep = this.toEndpoint(wa, upd.value.metricLabels, (set.byKey.get(key) ?? before?.get(key))?.load);
        if (ep) set.byKey.set(ep.key, ep);
      }
    } else if (upd.$case === 'remove') {
      for (const a of upd.value.addrs) {
        const key = keyOfAddr(a);
        if (key !== undefined) set.byKey.delete(key);
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

  /** An endpoint as destination describes it; `load`: the estimate it keeps from an earlier update. */
  toEndpoint(
    wa: destination.WeightedAddr,
    setLabels: Record<string, string> = {},
    load: PeakEwma = new PeakEwma(this.opts.ewma ?? DEFAULT_PEAK_EWMA),
  ): Endpoint | undefined {
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
      load,
      discovered: true,
    };
  }
}

function keyOfAddr(addr: Parameters<typeof fromTcpAddress>[0]): string | undefined {
  const t = fromTcpAddress(addr);
  return t ? keyOf(t.ip, t.port) : undefined;
}

export { keyOf, toTcpAddress };
