// The inbound policy of each port, watched from the policy controller (InboundServerPolicies.WatchPort),
// as linkerd2-proxy keeps it: every port starts with the configured default policy
// (MINIMESH_PROXY_INBOUND_DEFAULT_POLICY; opaque on opaque ports) and keeps it until the controller
// answers, and keeps the last answer while the controller is unreachable; a stream that fails or ends
// is retried with backoff (InvalidArgument and FailedPrecondition excepted: the request itself is bad);
// the streams sit in the one watched-stream cache (watch/watch-cache.ts).
// So a proxy never serves a port more openly than its configured default before the controller has
// said otherwise. Policies are compiled once per update; get() is a map lookup.
import { portInRanges, type PortRange } from '@minimesh/config';
import { compileDefaultPolicy, compileServerPolicy, type CompiledServerPolicy } from '@minimesh/policy/client';
import type { inbound } from '@minimesh/proto';
import type { Logger } from '@minimesh/runtime';
import { WatchCache } from '../watch/watch-cache.js';

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
}

/** Statuses after which retrying the same request cannot help (linkerd2-proxy gives up on these). */
const FATAL = new Set([3 /* INVALID_ARGUMENT */, 9 /* FAILED_PRECONDITION */]);
const CANCELLED = 1;

export class InboundPolicies {
  private readonly ports: WatchCache<number, PortEntry, inbound.Server>;
  private readonly log: Logger;
  private readonly defaults: { detect: CompiledServerPolicy; opaque: CompiledServerPolicy };

  constructor(private readonly opts: InboundPoliciesOptions) {
    const log = (this.log = opts.logger.child({ component: 'inbound-policy' }));
    const base = { clusterNetworks: opts.clusterNetworks, detectTimeoutMs: opts.detectTimeoutMs };
    this.defaults = {
      detect: compileDefaultPolicy(opts.defaultPolicy, { ...base, opaque: false }),
      opaque: compileDefaultPolicy(opts.defaultPolicy, { ...base, opaque: true }),
    };
    const client = opts.client;
    this.ports = new WatchCache<number, PortEntry, inbound.Server>(
      {
        open: client && ((port) => client().watchPort({ workload: opts.workload, port })),
        message: (e, s, port) => {
          const policy = compileServerPolicy(s);
          if (policy.invalid !== undefined)
            log.warn(
              { port, server: policy.meta.name, reason: policy.invalid },
              'invalid policy from the controller: admitting nothing',
            );
          e.policy = policy;
          if (!e.discovered)
            log.debug({ port, server: `${policy.meta.kind}/${policy.meta.name}` }, 'port policy discovered');
          e.discovered = true;
          opts.onUpdate?.(port, policy);
        },
        failed: (port, _e, err) => {
          if (err.code === CANCELLED) return false;
          if (FATAL.has(err.code)) {
            log.error(
              { port, code: err.code, err: err.details },
              'the policy controller refused the watch; keeping the current policy',
            );
            return false;
          }
          log.warn(
            { port, code: err.code, err: err.details },
            'policy watch failed; keeping the current policy and retrying',
          );
          return true;
        },
        openFailed: (port, err) =>
          log.warn({ port, err: (err as Error).message }, 'cannot watch the port policy; retrying'),
        ended: (port) => log.debug({ port }, 'policy watch ended; retrying'),
      },
      {
        idleMs: opts.idleMs,
        sweepMs: Math.max(1000, Math.min(30_000, opts.idleMs / 2)),
        backoff: opts.backoff ?? { minMs: 250, maxMs: 10_000 },
      },
    );
    for (const port of opts.ports) this.entry(port, true);
    if (!client)
      log.info(
        { defaultPolicy: opts.defaultPolicy },
        'no policy controller configured: every inbound port has the default policy',
      );
  }

  /** The policy of a port now (the default until the controller has answered). */
  get(port: number): CompiledServerPolicy {
    return this.entry(port, false).policy;
  }

  /** Whether the controller has answered for the port. */
  discovered(port: number): boolean {
    return this.ports.peek(port)?.discovered ?? false;
  }

  close(): void {
    this.ports.close();
  }

  /** The port's entry, watched from its first use (declared ports: from the start, and never dropped). */
  private entry(port: number, permanent: boolean): PortEntry {
    return this.ports.get(
      port,
      () => ({
        policy: portInRanges(port, this.opts.opaquePorts) ? this.defaults.opaque : this.defaults.detect,
        discovered: false,
      }),
      permanent,
    );
  }
}
