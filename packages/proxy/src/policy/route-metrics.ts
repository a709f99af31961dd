// Linkerd's outbound route and route-backend metrics, with its names, labels and buckets
// (linkerd2-proxy linkerd/app/outbound/src/http/logical/policy/route/metrics.rs and metrics/labels.rs,
// read on 2026-11-28), for HTTP routes (outbound_http_route_*) and gRPC routes (outbound_grpc_route_*):
//   <p>_request_duration_seconds            histogram, request start to response end   parent, route, hostname
//   <p>_request_statuses_total              counter, per status or error               + http_status|grpc_status, error
//   <p>_backend_requests_total              counter, requests dispatched to a backend  parent, route, backend
//   <p>_backend_response_duration_seconds   histogram                                  parent, route, backend
//   <p>_backend_response_statuses_total     counter                                    + http_status|grpc_status, error
// Labels: parent_{group,kind,namespace,name,port,section_name}, route_{group,kind,namespace,name},
// backend_{group,kind,namespace,name,port,section_name}; hostname is the request's host. Buckets:
// request 0.05, 0.5, 1, 10 s; backend response 0.025, 0.05, 0.1, 0.25, 0.5, 1, 10 s (Linkerd's).
// Empty labels are left out, as for every series of this proxy.
//
// Where minimesh differs: backend_requests_total counts every attempt of a retried request, but its
// backend response duration and status are recorded once, for the last attempt's backend (Linkerd
// records each attempt's response under its backend); errors are named from the proxy's error
// catalogue (REQUEST_TIMEOUT, RESPONSE_HEADERS_TIMEOUT, FAIL_FAST for no endpoints, else UNKNOWN).
import type {
  CompiledBackend,
  CompiledOutboundPolicy,
  CompiledOutboundRoute,
  PolicyMeta,
  ResourceRef,
} from '@minimesh/policy/client';
import type { Registry } from 'prom-client';
import type { RouteStats } from '../http/exchange.js';
import { SeriesCounter, SeriesHistogram, type CounterHandle, type HistogramHandle } from '../metrics/series.js';

type Labels = Record<string, string>;

const REQUEST_BUCKETS = [0.05, 0.5, 1, 10];
const RESPONSE_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 10];

const GRPC_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/** The `error` label of a proxy error code (Linkerd's names where they mean the same). */
export function errorLabel(code: string | undefined): string {
  switch (code) {
    case undefined:
      return '';
    case 'MINIMESH_PROXY_REQUEST_TIMEOUT':
      return 'REQUEST_TIMEOUT';
    case 'MINIMESH_PROXY_RESPONSE_TIMEOUT':
      return 'RESPONSE_HEADERS_TIMEOUT';
    case 'MINIMESH_PROXY_NO_ENDPOINTS':
      return 'FAIL_FAST';
    default:
      return 'UNKNOWN';
  }
}

class Families {
  readonly duration: SeriesHistogram;
  readonly statuses: SeriesCounter;
  readonly backendRequests: SeriesCounter;
  readonly backendDuration: SeriesHistogram;
  readonly backendStatuses: SeriesCounter;

  constructor(
    prefix: string,
    readonly grpc: boolean,
    registry: Registry,
  ) {
    this.duration = new SeriesHistogram(
      `${prefix}_request_duration_seconds`,
      'The time between request initialization and response completion',
      registry,
      REQUEST_BUCKETS,
    );
    this.statuses = new SeriesCounter(
      `${prefix}_request_statuses_total`,
      'Completed request-response streams',
      registry,
    );
    this.backendRequests = new SeriesCounter(
      `${prefix}_backend_requests_total`,
      'The total number of requests dispatched',
      registry,
    );
    this.backendDuration = new SeriesHistogram(
      `${prefix}_backend_response_duration_seconds`,
      'The time between request completion and response completion',
      registry,
      RESPONSE_BUCKETS,
    );
    this.backendStatuses = new SeriesCounter(
      `${prefix}_backend_response_statuses_total`,
      'Completed responses',
      registry,
    );
  }

  /** The status labels on top of `base`: http_status (or grpc_status) and error. */
  statusLabels(base: Labels, status: number, grpcStatus: number | undefined, error: string): Labels {
    if (this.grpc)
      return {
        ...base,
        grpc_status: error !== '' && grpcStatus === undefined ? '' : (GRPC_NAMES[grpcStatus ?? 2] ?? 'UNKNOWN'),
        error,
      };
    return { ...base, http_status: status > 0 ? String(status) : '', error };
  }
}

/** Series handles of one (route, hostname) or (route, backend): made once, then a map lookup. */
interface Handles {
  labels: Labels;
  duration: HistogramHandle;
  requests: CounterHandle | undefined;
  statuses: Map<string, CounterHandle>;
}

/** parent_* of a route's series, as linkerd2-proxy labels them (route, retry and TCP route metrics). */
export function parentLabels(policy: CompiledOutboundPolicy): Labels {
  return {
    parent_group: policy.meta.group,
    parent_kind: policy.meta.kind,
    parent_namespace: policy.ref.namespace,
    parent_name: policy.meta.name,
    parent_port: policy.ref.port ? String(policy.ref.port) : '',
    parent_section_name: policy.ref.section,
  };
}

/** route_* of an HTTP, gRPC, TLS or opaque route's series (a default route has no namespace). */
export function routeLabels(route: { meta: PolicyMeta; ref?: ResourceRef | undefined }): Labels {
  return {
    route_group: route.meta.group,
    route_kind: route.meta.kind,
    route_namespace: route.ref?.namespace ?? '',
    route_name: route.meta.name,
  };
}

/** backend_* from the backend's metadata (a Service: its namespace and port from the authority). */
function backendLabels(b: CompiledBackend): Labels {
  let namespace = '';
  let port = '';
  if (b.kind === 'balancer') {
    const m = /^[^.]+\.([^.]+)\.svc\.[^:]+:(\d+)$/.exec(b.authority);
    if (m) [, namespace = '', port = ''] = m;
  } else if (b.kind === 'forward') port = String(b.addr.port);
  return {
    backend_group: b.meta.group,
    backend_kind: b.meta.kind,
    backend_namespace: namespace,
    backend_name: b.meta.name,
    backend_port: port,
    backend_section_name: '',
  };
}

export class RouteMetrics {
  private readonly http: Families;
  private readonly grpc: Families;
  private readonly routes = new WeakMap<CompiledOutboundRoute, Map<string, Handles>>();
  private readonly backends = new WeakMap<CompiledOutboundRoute, WeakMap<CompiledBackend, Handles>>();

  constructor(registry: Registry) {
    this.http = new Families('outbound_http_route', false, registry);
    this.grpc = new Families('outbound_grpc_route', true, registry);
  }

  /** Starts recording a request that matched `route` (gRPC when the route is a GRPCRoute). */
  start(policy: CompiledOutboundPolicy, route: CompiledOutboundRoute, grpc: boolean, hostname: string): RouteStats {
    const f = grpc ? this.grpc : this.http;
    let byHost = this.routes.get(route);
    if (byHost === undefined) this.routes.set(route, (byHost = new Map()));
    let h = byHost.get(hostname);
    if (h === undefined) {
      const labels = { ...parentLabels(policy), ...routeLabels(route), hostname };
      byHost.set(
        hostname,
        (h = { labels, duration: f.duration.with(labels), requests: undefined, statuses: new Map() }),
      );
    }
    return new RouteRecord(this, f, policy, route, h);
  }

  /** The handles of a route's backend. */
  backendHandles(
    f: Families,
    policy: CompiledOutboundPolicy,
    route: CompiledOutboundRoute,
    b: CompiledBackend,
  ): Handles {
    let byBackend = this.backends.get(route);
    if (byBackend === undefined) this.backends.set(route, (byBackend = new WeakMap()));
    let h = byBackend.get(b);
    if (h === undefined) {
      const labels = { ...parentLabels(policy), ...routeLabels(route), ...backendLabels(b) };
      h = {
        labels,
        duration: f.backendDuration.with(labels),
        requests: f.backendRequests.with(labels),
        statuses: new Map(),
      };
      byBackend.set(b, h);
    }
    return h;
  }
}

function countStatus(
  series: SeriesCounter,
  f: Families,
  h: Handles,
  status: number,
  grpcStatus: number | undefined,
  error: string,
): void {
  const key = `${status}|${grpcStatus ?? ''}|${error}`;
  let c = h.statuses.get(key);
  if (c === undefined) h.statuses.set(key, (c = series.with(f.statusLabels(h.labels, status, grpcStatus, error))));
  c.value++;
}

/** One request's record: its route, the backend it went to, and how it ended (counted once). */
class RouteRecord implements RouteStats {
  private readonly t0 = performance.now();
  private backendT0 = 0;
  private backendHandles: Handles | undefined;
  private finished = false;

  constructor(
    private readonly metrics: RouteMetrics,
    private readonly f: Families,
    private readonly policy: CompiledOutboundPolicy,
    private readonly route: CompiledOutboundRoute,
    private readonly handles: Handles,
  ) {}

  backend(b: CompiledBackend): void {
    const h = this.metrics.backendHandles(this.f, this.policy, this.route, b);
    this.backendHandles = h;
    this.backendT0 = performance.now();
    if (h.requests) h.requests.value++;
  }

  done(status: number, grpcStatus: number | undefined, errorCode: string | undefined): void {
    if (this.finished) return;
    this.finished = true;
    const now = performance.now();
    const error = errorLabel(errorCode);
    const f = this.f;
    this.handles.duration.observe((now - this.t0) / 1000);
    countStatus(f.statuses, f, this.handles, status, grpcStatus, error);
    const b = this.backendHandles;
    if (b === undefined) return;
    b.duration.observe((now - this.backendT0) / 1000);
    countStatus(f.backendStatuses, f, b, status, grpcStatus, error);
  }
}
