// Outbound policies (OutboundPolicies.Watch) of the Services this proxy talks to, by authority
// (<svc>.<ns>.svc.<domain>:<port>) or by original destination (ClusterIP:port), cached and shared by
// every request, dropped after a while unused. Until the controller has answered a target — or when it
// says NotFound (not a Service) — there is no policy and requests go as they would without one: the
// route layer adds timeouts and retries only where a policy asks for them.
import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { compileOutboundPolicy, type CompiledOutboundPolicy } from '@minimesh/policy/client';
import { toTcpAddress, type outbound } from '@minimesh/proto';
import type { Logger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { RouteRetryMetrics } from './retry-metrics.js';

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
}

interface Entry {
  policy: CompiledOutboundPolicy | undefined;
  /** The controller said this target has no policy (NotFound); asked again after idleMs. */
  none: boolean;
  lastUsed: number;
  stream: ClientReadableStream<outbound.OutboundPolicy> | undefined;
  timer: NodeJS.Timeout | undefined;
  attempt: number;
  closed: boolean;
}

const NOT_FOUND = 5;
const FATAL = new Set([3 /* INVALID_ARGUMENT */, 9 /* FAILED_PRECONDITION */]);

export function targetKey(t: OutboundTarget): string {
  return t.kind === 'authority' ? t.authority : t.ip.includes(':') ? `[${t.ip}]:${t.port}` : `${t.ip}:${t.port}`;
}

export class OutboundPolicies {
  private readonly entries = new Map<string, Entry>();
  private readonly log: Logger;
  private readonly backoff: { minMs: number; maxMs: number };
  private readonly sweep: NodeJS.Timeout;
  /** outbound_http_route_retry_* (the retry layer counts into them). */
  readonly retryMetrics: RouteRetryMetrics;

  constructor(private readonly opts: OutboundPoliciesOptions) {
    this.log = opts.logger.child({ component: 'outbound-policy' });
    this.backoff = opts.backoff ?? { minMs: 250, maxMs: 10_000 };
    this.retryMetrics = new RouteRetryMetrics(opts.registry ?? new Registry());
    this.sweep = setInterval(() => this.dropIdle(), Math.max(500, Math.min(10_000, opts.idleMs / 2)));
    this.sweep.unref();
  }

  /** Whether a policy controller is configured (else get() always answers undefined). */
  get enabled(): boolean {
    return this.opts.client !== undefined;
  }

  /** The target's policy, if the controller has one for it; starts watching a new target. */
  get(target: OutboundTarget): CompiledOutboundPolicy | undefined {
    if (!this.opts.client) return undefined;
    const key = targetKey(target);
    let e = this.entries.get(key);
    if (!e) {
      e = {
        policy: undefined,
        none: false,
        lastUsed: 0,
        stream: undefined,
        timer: undefined,
        attempt: 0,
        closed: false,
      };
      this.entries.set(key, e);
      this.watch(key, target, e);
    }
    e.lastUsed = Date.now();
    return e.policy;
  }

  close(): void {
    clearInterval(this.sweep);
    for (const e of this.entries.values()) this.stop(e);
    this.entries.clear();
  }

  private watch(key: string, target: OutboundTarget, e: Entry): void {
    if (e.closed || !this.opts.client) return;
    e.timer = undefined;
    const spec: outbound.TrafficSpec = {
      sourceWorkload: this.opts.workload,
      target:
        target.kind === 'authority'
          ? { $case: 'authority', value: target.authority }
          : { $case: 'addr', value: toTcpAddress(target.ip, target.port) },
    };
    let stream: ClientReadableStream<outbound.OutboundPolicy>;
    try {
      stream = this.opts.client().watch(spec);
    } catch (err) {
      this.log.debug({ target: key, err: (err as Error).message }, 'cannot watch the outbound policy; retrying');
      return this.retry(key, target, e);
    }
    e.stream = stream;
    let failed = false;
    stream.on('data', (p: outbound.OutboundPolicy) => {
      e.attempt = 0;
      e.none = false;
      const compiled = compileOutboundPolicy(p);
      if (compiled.invalid !== undefined) {
        this.log.warn({ target: key, reason: compiled.invalid }, 'invalid outbound policy: ignoring it');
        e.policy = undefined;
        return;
      }
      e.policy = compiled;
    });
    stream.on('error', (err: ServiceError) => {
      failed = true;
      if (e.closed || err.code === 1) return;
      if (err.code === NOT_FOUND) {
        // Not a Service the controller knows: no policy; asked again once the entry is dropped.
        e.none = true;
        e.policy = undefined;
        return;
      }
      if (FATAL.has(err.code)) {
        this.log.warn(
          { target: key, code: err.code, err: err.details },
          'the policy controller refused the outbound watch',
        );
        return;
      }
      this.log.debug({ target: key, code: err.code, err: err.details }, 'outbound policy watch failed; retrying');
      this.retry(key, target, e);
    });
    stream.on('end', () => {
      if (!failed && !e.closed) this.retry(key, target, e);
    });
  }

  private retry(key: string, target: OutboundTarget, e: Entry): void {
    if (e.closed) return;
    e.stream = undefined;
    const base = Math.min(this.backoff.maxMs, this.backoff.minMs * 2 ** Math.min(e.attempt++, 16));
    e.timer = setTimeout(() => this.watch(key, target, e), base / 2 + Math.random() * (base / 2));
    e.timer.unref();
  }

  private stop(e: Entry): void {
    e.closed = true;
    if (e.timer) clearTimeout(e.timer);
    e.stream?.cancel();
  }

  private dropIdle(): void {
    const now = Date.now();
    for (const [key, e] of this.entries) {
      if (now - e.lastUsed < this.opts.idleMs) continue;
      this.stop(e);
      this.entries.delete(key);
    }
  }
}
