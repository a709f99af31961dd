// Outbound policies (OutboundPolicies.Watch) of the Services this proxy talks to, by authority
// (<svc>.<ns>.svc.<domain>:<port>) or by original destination (ClusterIP:port), cached and shared by
// every request, dropped after a while unused. Until the controller has answered a target — or when it
// says NotFound (not a Service) — there is no policy and requests go as they would without one: the
// route layer adds timeouts and retries only where a policy asks for them.
import { ipNetworkContains, parseCidr, parseIp, toIpNetwork, type IpNetwork } from '@minimesh/config';
import { compileOutboundPolicy, type CompiledOutboundPolicy } from '@minimesh/policy/client';
import { toTcpAddress, type outbound } from '@minimesh/proto';
import type { Logger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { keyOf } from '../targets.js';
import { WatchCache } from '../watch/watch-cache.js';
import { RouteMetrics } from './route-metrics.js';
import { RouteRetryMetrics } from './retry-metrics.js';
import { TcpRouteMetrics, TlsRouteMetrics } from './tcp-route-metrics.js';

export type OutboundTarget = { kind: 'authority'; authority: string } | { kind: 'addr'; ip: string; port: number };

export interface OutboundPoliciesOptions {
  client: (() => outbound.OutboundPoliciesClient) | undefined;
  /** JSON {"ns","pod"} naming this proxy's workload. */
  workload: string;
  idleMs: number;
  logger: Logger;
  backoff?: { minMs: number; maxMs: number };
  /** Where the route retry metrics register (default: a registry of their own). */
  registry?: Registry;
  /**
   * The cluster networks (MINIMESH_PROXY_POLICY_CLUSTER_NETWORKS): an original destination outside
   * them is egress, whose policy is awaited before traffic goes (isEgress). Absent: nothing is egress.
   */
  clusterNetworks?: readonly string[];
}

interface Entry {
  readonly target: OutboundTarget;
  policy: CompiledOutboundPolicy | undefined;
  /** The controller answered (a policy, NotFound, a refusal) or the stream failed once. */
  answered: boolean;
  /** Waiting for the first answer (whenAnswered). */
  waiters: Array<() => void> | undefined;
}

function settle(e: Entry): void {
  e.answered = true;
  const w = e.waiters;
  e.waiters = undefined;
  if (w) for (const f of w) f();
}

const CANCELLED = 1;
const NOT_FOUND = 5;
const FATAL = new Set([3 /* INVALID_ARGUMENT */, 9 /* FAILED_PRECONDITION */]);

/** The cache key of a target: its authority, or "ip:port" ("[ip]:port" for IPv6). */
export function targetKey(t: OutboundTarget): string {
  return t.kind === 'authority' ? t.authority : keyOf(t.ip, t.port);
}

export class OutboundPolicies {
  private readonly entries: WatchCache<string, Entry, outbound.OutboundPolicy>;
  /** outbound_http_route_retry_* (the retry layer counts into them). */
  readonly retryMetrics: RouteRetryMetrics;
  /** outbound_{http,grpc}_route_* (the route and backend stages count into them). */
  readonly routeMetrics: RouteMetrics;
  /** outbound_tcp_route_* (the egress stage counts opaque connections into them). */
  readonly tcpRouteMetrics: TcpRouteMetrics;
  /** outbound_tls_route_* (the TLS route stage counts TLS connections into them). */
  readonly tlsRouteMetrics: TlsRouteMetrics;
  private readonly clusterNetworks: IpNetwork[] | undefined;
  private readonly egressByIp = new Map<string, boolean>();

  constructor(private readonly opts: OutboundPoliciesOptions) {
    const log = opts.logger.child({ component: 'outbound-policy' });
    const registry = opts.registry ?? new Registry();
    this.retryMetrics = new RouteRetryMetrics(registry);
    this.routeMetrics = new RouteMetrics(registry);
    this.tcpRouteMetrics = new TcpRouteMetrics(registry);
    this.tlsRouteMetrics = new TlsRouteMetrics(registry);
    this.clusterNetworks = opts.clusterNetworks?.map((c) => toIpNetwork(parseCidr('cluster networks', c)));
    const client = opts.client;
    this.entries = new WatchCache<string, Entry, outbound.OutboundPolicy>(
      {
        open:
          client &&
          ((_key, { target }) =>
            client().watch({
              sourceWorkload: opts.workload,
              target:
                target.kind === 'authority'
                  ? { $case: 'authority', value: target.authority }
                  : { $case: 'addr', value: toTcpAddress(target.ip, target.port) },
            })),
        message: (e, p, key) => {
          const compiled = compileOutboundPolicy(p);
          if (compiled.invalid !== undefined) {
            log.warn({ target: key, reason: compiled.invalid }, 'invalid outbound policy: ignoring it');
            e.policy = undefined;
            settle(e);
            return;
          }
          e.policy = compiled;
          settle(e);
        },
        failed: (key, e, err) => {
          // Whatever happens next, nobody waits for this stream any longer.
          settle(e);
          if (err.code === CANCELLED) return false;
          if (err.code === NOT_FOUND) {
            // Not a Service the controller knows: no policy; asked again once the entry is dropped.
            e.policy = undefined;
            return false;
          }
          if (FATAL.has(err.code)) {
            log.warn(
              { target: key, code: err.code, err: err.details },
              'the policy controller refused the outbound watch',
            );
            return false;
          }
          log.debug({ target: key, code: err.code, err: err.details }, 'outbound policy watch failed; retrying');
          return true;
        },
        openFailed: (key, err) => {
          const e = this.entries.peek(key);
          if (e) settle(e);
          log.debug({ target: key, err: (err as Error).message }, 'cannot watch the outbound policy; retrying');
        },
      },
      {
        idleMs: opts.idleMs,
        sweepMs: Math.max(500, Math.min(10_000, opts.idleMs / 2)),
        backoff: opts.backoff ?? { minMs: 250, maxMs: 10_000 },
      },
    );
  }

  /** Whether a policy controller is configured (else get() always answers undefined). */
  get enabled(): boolean {
    return this.opts.client !== undefined;
  }

  /** The target's policy, if the controller has one for it; starts watching a new target. */
  get(target: OutboundTarget): CompiledOutboundPolicy | undefined {
    if (!this.opts.client) return undefined;
    const key = targetKey(target);
    return this.entries.get(key, () => ({ target, policy: undefined, answered: false, waiters: undefined })).policy;
  }

  /**
   * Whether an original destination is egress: outside the cluster networks (its policy, if the
   * controller classifies it, comes from an EgressNetwork). Always false without cluster networks.
   */
  isEgress(ip: string): boolean {
    const nets = this.clusterNetworks;
    if (nets === undefined || !this.enabled) return false;
    let v = this.egressByIp.get(ip);
    if (v === undefined) {
      const addr = parseIp(ip);
      v = addr !== undefined && !nets.some((n) => ipNetworkContains(n, addr));
      if (this.egressByIp.size >= 10_000) this.egressByIp.clear();
      this.egressByIp.set(ip, v);
    }
    return v;
  }

  /**
   * The target's policy once the controller has answered for it (or its stream failed): at once when it
   * has, else a promise settled with the answer, or with undefined after `timeoutMs` (then traffic goes
   * without a policy, as it always did while none was known).
   */
  whenAnswered(
    target: OutboundTarget,
    timeoutMs: number,
  ): CompiledOutboundPolicy | undefined | Promise<CompiledOutboundPolicy | undefined> {
    if (!this.opts.client) return undefined;
    const e = this.entries.get(targetKey(target), () => ({
      target,
      policy: undefined,
      answered: false,
      waiters: undefined,
    }));
    if (e.answered) return e.policy;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(e.policy);
      };
      const timer = setTimeout(() => {
        const i = e.waiters?.indexOf(done) ?? -1;
        if (i >= 0) e.waiters?.splice(i, 1);
        resolve(e.policy);
      }, timeoutMs);
      (e.waiters ??= []).push(done);
    });
  }

  close(): void {
    this.entries.close();
  }
}
