// The policy controller's Prometheus metrics, registered on the admin server's registry.
import { Counter, Gauge, type Registry } from 'prom-client';

export interface PolicyMetrics {
  openStreams: Gauge<'method'>;
  updatesSent: Counter<'method'>;
  requests: Counter<'method' | 'code'>;
  invalidResources: Gauge<'kind'>;
  watchRestarts: Counter<'resource' | 'reason'>;
  cacheSynced: Gauge<'resource'>;
  /** Route status writes by result (ok, conflict, error). */
  statusPatches: Counter<'result'>;
  /** 1 while this replica holds the status-write Lease. */
  statusLeader: Gauge;
}

export function createPolicyMetrics(registry: Registry): PolicyMetrics {
  const registers = [registry];
  return {
    openStreams: new Gauge({
      name: 'policy_open_streams',
      help: 'WatchPort/Watch streams open now',
      labelNames: ['method'],
      registers,
    }),
    updatesSent: new Counter({
      name: 'policy_updates_sent_total',
      help: 'Policies written on streams (and unary answers)',
      labelNames: ['method'],
      registers,
    }),
    requests: new Counter({
      name: 'policy_requests_total',
      help: 'gRPC calls by method and status code',
      labelNames: ['method', 'code'],
      registers,
    }),
    invalidResources: new Gauge({
      name: 'policy_invalid_resources',
      help: 'Policy resources that cannot be used (malformed), by kind; see the warn logs for why',
      labelNames: ['kind'],
      registers,
    }),
    watchRestarts: new Counter({
      name: 'policy_watch_restarts_total',
      help: 'Watch streams restarted, by resource and reason',
      labelNames: ['resource', 'reason'],
      registers,
    }),
    cacheSynced: new Gauge({
      name: 'policy_cache_synced',
      help: '1 once the resource has been listed',
      labelNames: ['resource'],
      registers,
    }),
    statusPatches: new Counter({
      name: 'policy_status_patches_total',
      help: 'Route status.parents writes, by result: ok, conflict (the route changed meanwhile: retried), error',
      labelNames: ['result'],
      registers,
    }),
    statusLeader: new Gauge({
      name: 'policy_status_leader',
      help: '1 while this replica holds the Lease that lets it write route statuses',
      registers,
    }),
  };
}
