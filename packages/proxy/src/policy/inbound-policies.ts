// The inbound policy of each port, watched from the policy controller (InboundServerPolicies.WatchPort),
// as linkerd2-proxy keeps it: every port starts with the configured default policy
// (MINIMESH_PROXY_INBOUND_DEFAULT_POLICY; opaque on opaque ports) and keeps it until the controller
// answers, and keeps the last answer while the controller is unreachable; a stream that fails or ends
// is retried with backoff (InvalidArgument and FailedPrecondition excepted: the request itself is bad).
// So a proxy never serves a port more openly than its configured default before the controller has
// said otherwise. Policies are compiled once per update; get() is a map lookup.
import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { portInRanges, type PortRange } from '@minimesh/config';
import { compileDefaultPolicy, compileServerPolicy, type CompiledServerPolicy } from '@minimesh/policy/client';
import type { inbound } from '@minimesh/proto';
import type { Logger } from '@minimesh/runtime';

export type DefaultPolicyName =
  'all-unauthenticated' | 'all-authenticated' | 'cluster-unauthenticated' | 'cluster-authenticated' | 'deny' | 'audit';

export interface InboundPoliciesOptions {
  /** The controller's client; undefined: no controller configured, the default policy for every port. */
  client: (() => inbound.InboundServerPoliciesClient) | undefined;
  /** JSON {"ns","pod"} naming this proxy's workload (MINIMESH_PROXY_POLICY_WORKLOAD). */
  workload: string;
  defaultPolicy: DefaultPolicyName;
  clusterNetworks: readonly string[];
  detectTimeoutMs: number;
  opaquePorts: readonly PortRange[];
  /** Ports watched from the start and never dropped (the pod's declared ports). */
  ports: readonly number[];
  /** Other ports are dropped this long after their last use (Linkerd: 90 s inbound). */
  idleMs: number;
  logger: Logger;
  backoff?: { minMs: number; maxMs: number };
  /** Told whenever a port's policy changes (metrics, tests). */
  onUpdate?: (port: number, policy: CompiledServerPolicy) => void;
}

interface PortEntry {
  policy: CompiledServerPolicy;
  /** True once the controller has answered for this port. */
  discovered: boolean;
  permanent: boolean;
  lastUsed: number;
  stream: ClientReadableStream<inbound.Server> | undefined;
  timer: NodeJS.Timeout | undefined;
  attempt: number;
  closed: boolean;
}

/** Statuses after which retrying the same request cannot help (linkerd2-proxy gives up on these). */
const FATAL = new Set([3 /* INVALID_ARGUMENT */, 9 /* FAILED_PRECONDITION */]);

export class InboundPolicies {
  private readonly ports = new Map<number, PortEntry>();
  private readonly log: Logger;
  private readonly backoff: { minMs: number; maxMs: number };
  private readonly sweep: NodeJS.Timeout;
  private readonly defaults: { detect: CompiledServerPolicy; opaque: CompiledServerPolicy };

  constructor(private readonly opts: InboundPoliciesOptions) {
    this.log = opts.logger.child({ component: 'inbound-policy' });
    this.backoff = opts.backoff ?? { minMs: 250, maxMs: 10_000 };
    const base = { clusterNetworks: opts.clusterNetworks, detectTimeoutMs: opts.detectTimeoutMs };
    this.defaults = {
      detect: compileDefaultPolicy(opts.defaultPolicy, { ...base, opaque: false }),
      opaque: compileDefaultPolicy(opts.defaultPolicy, { ...base, opaque: true }),
    };
    for (const port of opts.ports) this.entry(port, true);
    this.sweep = setInterval(() => this.dropIdle(), Math.max(1000, Math.min(30_000, opts.idleMs / 2)));
    this.sweep.unref();
    if (!opts.client)
      this.log.info(
        { defaultPolicy: opts.defaultPolicy },
        'no policy controller configured: every inbound port has the default policy',
      );
  }

  /** The policy of a port now (the default until the controller has answered). */
  get(port: number): CompiledServerPolicy {
    const e = this.ports.get(port) ?? this.entry(port, false);
    e.lastUsed = Date.now();
    return e.policy;
  }

  /** Whether the controller has answered for the port. */
  discovered(port: number): boolean {
    return this.ports.get(port)?.discovered ?? false;
  }

  close(): void {
    clearInterval(this.sweep);
    for (const [port, e] of this.ports) this.stop(port, e);
    this.ports.clear();
  }

  private entry(port: number, permanent: boolean): PortEntry {
    const e: PortEntry = {
      policy: portInRanges(port, this.opts.opaquePorts) ? this.defaults.opaque : this.defaults.detect,
      discovered: false,
      permanent,
      lastUsed: Date.now(),
      stream: undefined,
      timer: undefined,
      attempt: 0,
      closed: false,
    };
    this.ports.set(port, e);
    this.watch(port, e);
    return e;
  }

  private watch(port: number, e: PortEntry): void {
    if (e.closed || !this.opts.client) return;
    e.timer = undefined;
    let stream: ClientReadableStream<inbound.Server>;
    try {
      stream = this.opts.client().watchPort({ workload: this.opts.workload, port });
    } catch (err) {
      this.log.warn({ port, err: (err as Error).message }, 'cannot watch the port policy; retrying');
      this.retry(port, e);
      return;
    }
    e.stream = stream;
    let failed = false;
    stream.on('data', (s: inbound.Server) => {
      e.attempt = 0;
      const policy = compileServerPolicy(s);
      if (policy.invalid !== undefined)
        this.log.warn(
          { port, server: policy.meta.name, reason: policy.invalid },
          'invalid policy from the controller: admitting nothing',
        );
      e.policy = policy;
      if (!e.discovered)
        this.log.debug({ port, server: `${policy.meta.kind}/${policy.meta.name}` }, 'port policy discovered');
      e.discovered = true;
      this.opts.onUpdate?.(port, policy);
    });
    stream.on('error', (err: ServiceError) => {
      failed = true;
      if (e.closed || err.code === 1 /* CANCELLED by us */) return;
      if (FATAL.has(err.code)) {
        this.log.error(
          { port, code: err.code, err: err.details },
          'the policy controller refused the watch; keeping the current policy',
        );
        return;
      }
      this.log.warn(
        { port, code: err.code, err: err.details },
        'policy watch failed; keeping the current policy and retrying',
      );
      this.retry(port, e);
    });
    stream.on('end', () => {
      if (failed || e.closed) return;
      this.log.debug({ port }, 'policy watch ended; retrying');
      this.retry(port, e);
    });
  }

  private retry(port: number, e: PortEntry): void {
    if (e.closed) return;
    e.stream = undefined;
    const base = Math.min(this.backoff.maxMs, this.backoff.minMs * 2 ** Math.min(e.attempt++, 16));
    e.timer = setTimeout(() => this.watch(port, e), base / 2 + Math.random() * (base / 2));
    e.timer.unref();
  }

  private stop(_port: number, e: PortEntry): void {
    e.closed = true;
    if (e.timer) clearTimeout(e.timer);
    e.stream?.cancel();
  }

  private dropIdle(): void {
    const now = Date.now();
    for (const [port, e] of this.ports) {
      if (e.permanent || now - e.lastUsed < this.opts.idleMs) continue;
      this.stop(port, e);
      this.ports.delete(port);
    }
  }
}
