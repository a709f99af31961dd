// Failure accrual (circuit breaking) across a balanced set, as linkerd2-proxy applies a Service's
// FailureAccrual: every endpoint of a Service whose OutboundPolicy carries one gets a breaker
// (balance/consecutive-failures.ts) that the exchange feeds with each response (PeakEwma.end); the
// balancer picks only among endpoints whose breaker lets a request through. When every endpoint is
// ejected the request is refused at once (503) rather than queued: linkerd2-proxy's balancer would
// hold it in its queue until the failfast timeout (3 s) and then answer 503 too.
//
// Metric, with linkerd2-proxy's name and labels: outbound_http_balancer_endpoints{endpoint_state=
// "ready"|"pending", parent_*, backend_*}, per balanced Service (here parent and backend both name the
// Service the endpoints belong to; linkerd2-proxy names a route backend's parent Service as parent).
import type { CompiledFailureAccrual } from '@minimesh/policy/client';
import type { Logger } from '@minimesh/runtime';
import { Gauge, type Registry } from 'prom-client';
import type { Endpoint } from '../targets.js';
import { ConsecutiveFailures } from './consecutive-failures.js';
import { pickP2c } from './p2c-peak-ewma.js';

export interface FailureAccrualOptions {
  /** The failure accrual of a Service, by its authority (<svc>.<ns>.svc.<domain>:<port>); undefined: none. */
  lookup: (authority: string) => CompiledFailureAccrual | undefined;
  /** Endpoint health: whether a connection to it works (balance/endpoint-health.ts). */
  healthy: (ep: Endpoint) => boolean;
  log: Logger;
  registry?: Registry | undefined;
  /** The clock PeakEwma uses (performance.now). */
  now?: () => number;
  random?: () => number;
}

/** A balanced set as the balance stage sees it. */
export interface BalancedSet {
  readonly authority: string;
  readonly set: { readonly list: readonly Endpoint[] };
}

/** Every endpoint of the set is ejected: nothing to send to. */
export const ALL_EJECTED = Symbol('all endpoints ejected');

const LABELS = [
  'endpoint_state',
  'parent_group',
  'parent_kind',
  'parent_namespace',
  'parent_name',
  'parent_port',
  'backend_group',
  'backend_kind',
  'backend_namespace',
  'backend_name',
  'backend_port',
] as const;

/** parent_* and backend_* of a Service authority (empty when it does not name a Service). */
function serviceLabels(authority: string): Record<string, string> {
  const m = /^([^.]+)\.([^.]+)\.svc\.[^:]+:(\d+)$/.exec(authority);
  const [group, kind, name, ns, port] = m ? ['core', 'Service', m[1]!, m[2]!, m[3]!] : ['', '', authority, '', ''];
  return {
    parent_group: group,
    parent_kind: kind,
    parent_namespace: ns,
    parent_name: name,
    parent_port: port,
    backend_group: group,
    backend_kind: kind,
    backend_namespace: ns,
    backend_name: name,
    backend_port: port,
  };
}

export class FailureAccrual {
  /** The balanced sets seen, for the endpoints gauge (dropped once discovery drops them). */
  private readonly sets = new Map<string, WeakRef<BalancedSet['set']>>();
  /** Sets whose endpoints carry breakers (so a set without accrual costs no walk over its endpoints). */
  private readonly armed = new WeakSet<BalancedSet['set']>();
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(private readonly opts: FailureAccrualOptions) {
    this.now = opts.now ?? (() => performance.now());
    this.random = opts.random ?? Math.random;
    if (opts.registry) {
      const gauge: Gauge<(typeof LABELS)[number]> = new Gauge({
        name: 'outbound_http_balancer_endpoints',
        help: 'The number of endpoints currently in a HTTP request balancer',
        labelNames: LABELS,
        registers: [opts.registry],
        collect: () => this.collect(gauge),
      });
    }
  }

  /** Sets the endpoints gauge from the balanced sets seen (at scrape time). */
  private collect(gauge: Gauge<(typeof LABELS)[number]>): void {
    gauge.reset();
    const now = this.now();
    for (const [authority, ref] of this.sets) {
      const set = ref.deref();
      if (set === undefined) {
        this.sets.delete(authority);
        continue;
      }
      const labels = serviceLabels(authority);
      let ready = 0;
      for (const ep of set.list) if (this.sendable(ep, now)) ready++;
      gauge.set({ endpoint_state: 'ready', ...labels }, ready);
      gauge.set({ endpoint_state: 'pending', ...labels }, set.list.length - ready);
    }
  }

  /**
   * The endpoint a request to `b` goes to: P2C among those whose breaker admits it (and, of those,
   * the healthy ones); ALL_EJECTED when every endpoint's breaker is open; undefined without endpoints.
   */
  pick(b: BalancedSet): Endpoint | typeof ALL_EJECTED | undefined {
    const list = b.set.list;
    const tracked = this.sets.get(b.authority);
    if (tracked?.deref() !== b.set) this.sets.set(b.authority, new WeakRef(b.set));
    const config = this.opts.lookup(b.authority);
    if (config === undefined) {
      // No accrual (or no longer): breakers left from an earlier policy come off.
      if (this.armed.delete(b.set)) for (const ep of list) if (ep.load) ep.load.breaker = undefined;
      return pickP2c(list, this.random, this.opts.healthy);
    }
    this.armed.add(b.set);
    const now = this.now();
    let out = 0;
    for (const ep of list) {
      const load = ep.load;
      if (load === undefined) continue;
      const breaker = this.configure(b.authority, ep, config);
      if (!breaker.available(now)) out++;
    }
    let candidates = list;
    if (out > 0) {
      if (out === list.length) return ALL_EJECTED;
      candidates = list.filter((ep) => ep.load?.breaker?.available(now) !== false);
      if (candidates.length === 0) return ALL_EJECTED;
    }
    const ep = pickP2c(candidates, this.random, this.opts.healthy);
    ep?.load?.breaker?.picked(now);
    return ep;
  }

  /** The soonest an ejected endpoint of `b` may be probed, in ms from now (for the 503's message). */
  nextProbeInMs(b: BalancedSet): number {
    const now = this.now();
    let soonest = Infinity;
    for (const ep of b.set.list) {
      const until = ep.load?.breaker?.ejectedUntil ?? 0;
      if (until > 0) soonest = Math.min(soonest, until - now);
    }
    return Number.isFinite(soonest) ? Math.max(0, Math.ceil(soonest)) : 0;
  }

  /** Healthy and admitted by its breaker (if any). */
  private sendable(ep: Endpoint, now: number): boolean {
    return this.opts.healthy(ep) && ep.load?.breaker?.available(now) !== false;
  }

  /** The endpoint's breaker under `config` (a changed configuration starts it over). */
  private configure(authority: string, ep: Endpoint, config: CompiledFailureAccrual): ConsecutiveFailures {
    const load = ep.load!;
    const b = load.breaker;
    if (b !== undefined) {
      if (b.config === config) return b;
      const c = b.config;
      if (
        c.maxFailures === config.maxFailures &&
        c.minMs === config.minMs &&
        c.maxMs === config.maxMs &&
        c.jitter === config.jitter
      ) {
        b.config = config; // the same values in a new policy message: keep the state
        return b;
      }
    }
    const log = this.opts.log;
    const fresh = new ConsecutiveFailures(config, this.random, (change, breaker) => {
      if (change === 'ejected')
        log.info(
          { authority, endpoint: ep.key, penaltyMs: Math.round(breaker.penaltyMs) },
          'endpoint ejected by failure accrual (consecutive failures)',
        );
      else log.info({ authority, endpoint: ep.key }, 'endpoint restored: its probe succeeded');
    });
    load.breaker = fresh;
    return fresh;
  }
}
