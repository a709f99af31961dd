// The destination's Prometheus metrics, registered on the admin server's registry.
import { Counter, Gauge, type Registry } from 'prom-client';

export interface DestinationMetrics {
  openStreams: Gauge<'method'>;
  updatesSent: Counter<'method'>;
  queueOverflows: Counter<'service'>;
  watchRestarts: Counter<'resource' | 'reason'>;
  cacheSynced: Gauge<'resource'>;
  leader: Gauge;
  mirrorWrites: Counter<'verb' | 'result'>;
}

export function createDestinationMetrics(registry: Registry): DestinationMetrics {
  const registers = [registry];
  return {
    openStreams: new Gauge({
      name: 'destination_open_streams',
      help: 'Get/GetProfile streams open now',
      labelNames: ['method'],
      registers,
    }),
    updatesSent: new Counter({
      name: 'destination_updates_sent_total',
      help: 'Messages sent on Get/GetProfile streams',
      labelNames: ['method'],
      registers,
    }),
    queueOverflows: new Counter({
      name: 'endpoint_updates_queue_overflow_total',
      help: 'Streams closed because the client fell behind by more than --stream-queue-capacity updates',
      labelNames: ['service'],
      registers,
    }),
    watchRestarts: new Counter({
      name: 'destination_watch_restarts_total',
      help: 'Watch requests restarted, by resource and reason (ended, expired, error)',
      labelNames: ['resource', 'reason'],
      registers,
    }),
    cacheSynced: new Gauge({
      name: 'destination_cache_synced',
      help: '1 once the resource has been listed',
      labelNames: ['resource'],
      registers,
    }),
    leader: new Gauge({
      name: 'destination_leader',
      help: '1 while this replica holds the endpoint-write Lease',
      registers,
    }),
    mirrorWrites: new Counter({
      name: 'destination_external_workload_slice_writes_total',
      help: 'EndpointSlice writes by the ExternalWorkload mirror',
      labelNames: ['verb', 'result'],
      registers,
    }),
  };
}
