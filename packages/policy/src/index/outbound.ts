// What a client is told about a Service port: its protocol, the HTTPRoutes attached to it (routes in
// the client's own namespace, "consumer routes", win over those in the Service's namespace), each
// rule's backends, timeouts and retries. Pure functions of the store, as Linkerd's outbound index.
import { serviceAuthority } from '../cluster-info.js';
import type { OutboundHttpRoute, OutboundPolicy, RouteBackend, RouteTimeouts } from '../model.js';
import { byCreationThenName } from '../resources/fields.js';
import type { HttpRouteSpec } from '../resources/http-route.js';
import { refersTo } from '../resources/kinds.js';
import { serviceAppProtocol, type ServiceRecord } from '../resources/service.js';
import type { ResourceStore } from './store.js';

export interface ServiceTarget {
  namespace: string;
  name: string;
  port: number;
}

/** The Service owning a cluster IP, and whether it defines the port. */
export function lookupServiceIp(
  store: ResourceStore,
  ip: string,
  port: number,
): { service: ServiceRecord; portDefined: boolean } | undefined {
  for (const svc of store.all('Service')) {
    if (!svc.clusterIPs.includes(ip)) continue;
    return { service: svc, portDefined: svc.ports.some((p) => p.port === port) };
  }
  return undefined;
}

/** The HTTPRoutes that attach to the Service port, as the client in sourceNamespace sees them. */
export function routesForService(
  store: ResourceStore,
  target: ServiceTarget,
  sourceNamespace: string,
): HttpRouteSpec[] {
  const attached = (r: HttpRouteSpec) =>
    r.parents.some(
      (p) =>
        p.kind === 'service' &&
        p.namespace === target.namespace &&
        p.name === target.name &&
        (p.port === undefined || p.port === target.port),
    );
  const consumer =
    sourceNamespace !== target.namespace ? store.inNamespace('HTTPRoute', sourceNamespace).filter(attached) : [];
  const routes = consumer.length > 0 ? consumer : store.inNamespace('HTTPRoute', target.namespace).filter(attached);
  return routes.sort((a, b) => byCreationThenName(a.meta, b.meta));
}

export function computeOutbound(
  store: ResourceStore,
  svc: ServiceRecord,
  port: number,
  sourceNamespace: string,
): OutboundPolicy {
  const cluster = store.cluster;
  const target = { namespace: svc.namespace, name: svc.name, port };
  const appProtocol = serviceAppProtocol(svc, port, cluster.defaultOpaquePorts);
  const httpRoutes = routesForService(store, target, sourceNamespace).map((r) => toOutboundRoute(store, r));
  return {
    service: { ...target, authority: serviceAuthority(cluster, svc.namespace, svc.name, port) },
    ...(appProtocol ? { appProtocol } : {}),
    httpRoutes,
    timeouts: svc.timeouts,
    ...(svc.retry ? { retry: svc.retry } : {}),
  };
}

function toOutboundRoute(store: ResourceStore, r: HttpRouteSpec): OutboundHttpRoute {
  return {
    ref: {
      kind: 'resource',
      group: 'policy.minimesh.io',
      resourceKind: 'HTTPRoute',
      name: r.meta.name,
      namespace: r.meta.namespace,
    },
    hostnames: r.hostnames,
    rules: r.rules.map((rule) => {
      const timeouts: RouteTimeouts = { ...r.timeouts };
      // The annotation wins over the rule's timeouts.request; zero means no timeout (GEP-1742).
      if (timeouts.requestMs === undefined && rule.requestTimeoutMs !== undefined && rule.requestTimeoutMs > 0)
        timeouts.requestMs = rule.requestTimeoutMs;
      return {
        matches: rule.matches,
        filters: rule.filters,
        backends: rule.backendRefs.map((b): RouteBackend => {
          if (!refersTo(b, '', 'Service'))
            return {
              kind: 'invalid',
              weight: b.weight,
              message: `unsupported backend type ${b.group || 'core'} ${b.kind}`,
            };
          if (b.port === undefined)
            return { kind: 'invalid', weight: b.weight, message: `missing port for backend Service ${b.name}` };
          return {
            kind: 'service',
            name: b.name,
            namespace: b.namespace,
            port: b.port,
            authority: serviceAuthority(store.cluster, b.namespace, b.name, b.port),
            weight: b.weight,
            exists: store.get('Service', b.namespace, b.name) !== undefined,
            filters: b.filters,
          };
        }),
        timeouts,
        ...(r.retry ? { retry: r.retry } : {}),
      };
    }),
  };
}

/**
 * The effective timeouts and retry of a rule: its own, or else the Service's (as Linkerd applies the
 * Service's annotations to rules that set none).
 */
export function effectiveRule(
  policy: OutboundPolicy,
  rule: { timeouts: RouteTimeouts; retry?: OutboundPolicy['retry'] },
): { timeouts: RouteTimeouts; retry?: OutboundPolicy['retry'] } {
  const timeouts = Object.keys(rule.timeouts).length > 0 ? rule.timeouts : policy.timeouts;
  const retry = rule.retry ?? policy.retry;
  return { timeouts, ...(retry ? { retry } : {}) };
}
