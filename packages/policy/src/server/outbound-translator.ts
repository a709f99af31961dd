// OutboundPolicy (the model) → io.linkerd.proxy.outbound.OutboundPolicy, as Linkerd's policy
// controller encodes a Service port: protocol detection (10 s) with HTTP/1, HTTP/2 and opaque routes
// unless the port's appProtocol says otherwise; each backend a P2C balancer over Destination.Get of the
// Service authority with peak-EWMA (30 ms default RTT, 10 s decay) and a queue of 100 (3 s fail-fast);
// retries with 25-250 ms backoff and 64 KiB request buffering. Also the answers for addresses that are
// not Services: a forward to the original destination, or a forbidden route for an undefined port.
import { toTcpAddress, type outbound } from '@minimesh/proto';
import type {
  HttpFilter,
  OutboundHttpRouteRule,
  OutboundPolicy,
  RouteBackend,
  RouteRetry,
  RouteTimeouts,
} from '../model.js';
import {
  defaultMeta,
  resourceMeta,
  routeMeta,
  toDuration,
  toFilterKind,
  toHostMatch,
  toHttpMatch,
} from './translate-common.js';

export const DETECT_TIMEOUT_MS = 10_000;
const QUEUE: outbound.Queue = { capacity: 100, failfastTimeout: toDuration(3000) };
const LOAD: outbound.Backend_BalanceP2c['load'] = {
  $case: 'peakEwma',
  value: { defaultRtt: toDuration(30), decay: toDuration(10_000) },
};

function serviceBackend(b: { namespace: string; name: string; port: number; authority: string }): outbound.Backend {
  return {
    metadata: resourceMeta({ group: 'core', kind: 'Service', name: b.name, namespace: b.namespace, port: b.port }),
    queue: QUEUE,
    kind: {
      $case: 'balancer',
      value: { discovery: { kind: { $case: 'dst', value: { path: b.authority } } }, load: LOAD },
    },
  };
}

function toFilters(list: readonly HttpFilter[]): outbound.HttpRoute_Filter[] {
  return list.map((f) => ({ kind: toFilterKind(f) }));
}

function toRetry(r: RouteRetry): outbound.HttpRoute_Retry {
  return {
    maxRetries: r.limit,
    maxRequestBytes: 64 * 1024,
    conditions: { statusRanges: (r.statusRanges ?? []).map((s) => ({ start: s.min, end: s.max })) },
    ...(r.timeoutMs !== undefined ? { timeout: toDuration(r.timeoutMs) } : {}),
    backoff: { minBackoff: toDuration(25), maxBackoff: toDuration(250), jitterRatio: 1, respectRetryAfterHint: false },
  };
}

function toTimeouts(t: RouteTimeouts): NonNullable<outbound.HttpRoute_Rule['timeouts']> {
  return {
    ...(t.requestMs !== undefined ? { request: toDuration(t.requestMs) } : {}),
    ...(t.responseMs !== undefined ? { response: toDuration(t.responseMs) } : {}),
    ...(t.idleMs !== undefined ? { idle: toDuration(t.idleMs) } : {}),
  };
}

function toRouteBackend(b: RouteBackend): outbound.HttpRoute_WeightedRouteBackend {
  if (b.kind === 'service' && b.exists)
    return { weight: b.weight, backend: { backend: serviceBackend(b), filters: toFilters(b.filters) } };
  const message = b.kind === 'service' ? `Service not found ${b.name}` : b.message;
  const metadata =
    b.kind === 'service'
      ? resourceMeta({ group: 'core', kind: 'Service', name: b.name, namespace: b.namespace, port: b.port })
      : defaultMeta('invalid');
  return {
    weight: b.weight,
    backend: {
      backend: { metadata, queue: QUEUE },
      filters: [{ kind: { $case: 'failureInjector', value: { status: 500, message } } }],
    },
  };
}

function toRule(
  rule: Pick<OutboundHttpRouteRule, 'matches' | 'filters' | 'backends'>,
  timeouts: RouteTimeouts,
  retry: RouteRetry | undefined,
  parent: outbound.Backend,
  allowL5dRequestHeaders: boolean,
): outbound.HttpRoute_Rule {
  const backends: outbound.HttpRoute_Distribution =
    rule.backends.length === 0
      ? { kind: { $case: 'firstAvailable', value: { backends: [{ backend: parent, filters: [] }] } } }
      : { kind: { $case: 'randomAvailable', value: { backends: rule.backends.map(toRouteBackend) } } };
  return {
    matches: rule.matches.map(toHttpMatch),
    filters: toFilters(rule.filters),
    backends,
    ...(timeouts.requestMs !== undefined ? { requestTimeout: toDuration(timeouts.requestMs) } : {}),
    timeouts: toTimeouts(timeouts),
    ...(retry ? { retry: toRetry(retry) } : {}),
    allowL5dRequestHeaders,
  };
}

function opaqueRoute(backend: outbound.Backend, name: string): outbound.OpaqueRoute {
  return {
    metadata: defaultMeta(name),
    rules: [
      { backends: { kind: { $case: 'firstAvailable', value: { backends: [{ backend, filters: [] }] } } }, filters: [] },
    ],
  };
}

export function toProtoOutbound(
  policy: OutboundPolicy,
  opts: { allowL5dRequestHeaders?: boolean } = {},
): outbound.OutboundPolicy {
  const allow = opts.allowL5dRequestHeaders ?? false;
  const parent = serviceBackend(policy.service);
  const routes: outbound.HttpRoute[] =
    policy.httpRoutes.length > 0
      ? policy.httpRoutes.map((r) => ({
          metadata: routeMeta(r.ref),
          hosts: r.hostnames.map(toHostMatch),
          rules: r.rules.map((rule) => {
            // A rule without timeouts (or retries) of its own takes the Service's.
            const timeouts = Object.keys(rule.timeouts).length > 0 ? rule.timeouts : policy.timeouts;
            return toRule(rule, timeouts, rule.retry ?? policy.retry, parent, allow);
          }),
        }))
      : [
          {
            metadata: defaultMeta('http'),
            hosts: [],
            rules: [
              toRule(
                {
                  matches: [{ path: { kind: 'prefix', value: '/' }, headers: [], queryParams: [] }],
                  filters: [],
                  backends: [],
                },
                policy.timeouts,
                policy.retry,
                parent,
                allow,
              ),
            ],
          },
        ];
  let kind: outbound.ProxyProtocol['kind'];
  switch (policy.appProtocol) {
    case 'http1':
      kind = { $case: 'http1', value: { routes } };
      break;
    case 'http2':
      kind = { $case: 'http2', value: { routes } };
      break;
    case 'opaque':
      kind = { $case: 'opaque', value: { routes: [opaqueRoute(parent, 'opaq')] } };
      break;
    case undefined:
      kind = {
        $case: 'detect',
        value: {
          timeout: toDuration(DETECT_TIMEOUT_MS),
          opaque: { routes: [opaqueRoute(parent, 'opaq')] },
          http1: { routes },
          http2: { routes },
        },
      };
  }
  const s = policy.service;
  return {
    metadata: resourceMeta({ group: 'core', kind: 'Service', name: s.name, namespace: s.namespace, port: s.port }),
    protocol: { kind },
  };
}

/** An address outside the cluster networks: forward to it as it is (Linkerd's "egress-fallback"). */
export function toFallbackPolicy(addr: { ip: string; port: number }): outbound.OutboundPolicy {
  const backend: outbound.Backend = {
    metadata: defaultMeta('egress-fallback'),
    queue: QUEUE,
    kind: { $case: 'forward', value: { addr: toTcpAddress(addr.ip, addr.port), weight: 1, metricLabels: {} } },
  };
  const route: outbound.HttpRoute = {
    metadata: defaultMeta('egress-fallback'),
    hosts: [],
    rules: [
      {
        matches: [{ headers: [], queryParams: [] }],
        filters: [],
        backends: { kind: { $case: 'firstAvailable', value: { backends: [{ backend, filters: [] }] } } },
        allowL5dRequestHeaders: false,
      },
    ],
  };
  return {
    metadata: defaultMeta('egress-fallback'),
    protocol: {
      kind: {
        $case: 'detect',
        value: {
          timeout: toDuration(DETECT_TIMEOUT_MS),
          opaque: { routes: [opaqueRoute(backend, 'egress-fallback')] },
          http1: { routes: [route] },
          http2: { routes: [route] },
        },
      },
    },
  };
}

/** A Service cluster IP on a port the Service does not define: connections are refused. */
export function toUndefinedPortPolicy(svc: { namespace: string; name: string; port: number }): outbound.OutboundPolicy {
  return {
    metadata: resourceMeta({
      group: 'core',
      kind: 'Service',
      name: svc.name,
      namespace: svc.namespace,
      port: svc.port,
    }),
    protocol: {
      kind: {
        $case: 'opaque',
        value: {
          routes: [
            {
              metadata: defaultMeta('undefined-port'),
              rules: [
                {
                  backends: { kind: { $case: 'empty', value: {} } },
                  filters: [{ kind: { $case: 'forbidden', value: {} } }],
                },
              ],
            },
          ],
        },
      },
    },
  };
}
