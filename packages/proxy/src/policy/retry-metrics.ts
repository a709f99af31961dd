// Linkerd's outbound route retry metrics, with its names and labels (linkerd2-proxy linkerd/http/retry,
// registered under outbound_http_route_retry_*):
//   outbound_http_route_retry_requests_total        retries sent
//   outbound_http_route_retry_successes_total       retries whose response was not itself retryable
//   outbound_http_route_retry_limit_exceeded_total  retryable responses returned because retries ran out
//   outbound_http_route_retry_overflow_total        retryable responses returned because no endpoint could take a retry
// Labels: parent_group, parent_kind, parent_namespace, parent_name, parent_port, parent_section_name,
// route_group, route_kind, route_namespace, route_name (empty ones are left out, as for every series).
import type { CompiledOutboundPolicy, CompiledOutboundRoute } from '@minimesh/policy/client';
import type { Registry } from 'prom-client';
import { SeriesCounter, type CounterHandle } from '../metrics/series.js';
import { parentLabels, routeLabels } from './route-metrics.js';

export interface RouteRetryCounters {
  requests: CounterHandle;
  successes: CounterHandle;
  limitExceeded: CounterHandle;
  overflow: CounterHandle;
}

export class RouteRetryMetrics {
  private readonly requests: SeriesCounter;
  private readonly successes: SeriesCounter;
  private readonly limitExceeded: SeriesCounter;
  private readonly overflow: SeriesCounter;
  /** Per compiled route (one per policy update), so a retried request costs no label building. */
  private readonly byRoute = new WeakMap<CompiledOutboundRoute, RouteRetryCounters>();

  constructor(registry: Registry) {
    this.requests = new SeriesCounter('outbound_http_route_retry_requests_total', 'Retry requests emitted', registry);
    this.successes = new SeriesCounter(
      'outbound_http_route_retry_successes_total',
      'Successful responses to retry requests',
      registry,
    );
    this.limitExceeded = new SeriesCounter(
      'outbound_http_route_retry_limit_exceeded_total',
      'Retryable requests not sent due to retry limits',
      registry,
    );
    this.overflow = new SeriesCounter(
      'outbound_http_route_retry_overflow_total',
      'Retryable requests not sent due to circuit breakers',
      registry,
    );
  }

  counters(policy: CompiledOutboundPolicy, route: CompiledOutboundRoute): RouteRetryCounters {
    let c = this.byRoute.get(route);
    if (c) return c;
    const labels = { ...parentLabels(policy), ...routeLabels(route) };
    c = {
      requests: this.requests.with(labels),
      successes: this.successes.with(labels),
      limitExceeded: this.limitExceeded.with(labels),
      overflow: this.overflow.with(labels),
    };
    this.byRoute.set(route, c);
    return c;
  }
}
