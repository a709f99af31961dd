// Which routes attach to which Service port, and why not: the one place that decides it, so the routes
// the controller serves and the status it writes (Accepted, ResolvedRefs) never disagree. Pure
// functions of the store, computed alike by every replica (the leader only writes them down).
//
// The rules, from the Gateway API's mesh mode (GEP-1426/GEP-1294) and Linkerd where the spec is silent:
// - a Service parent must exist and have a ClusterIP (not headless, not ExternalName); a parentRef
//   `port` (or `sectionName`, a port name) must name one of its ports; without either the route
//   attaches to every port;
// - on one Service port GRPCRoute wins over HTTPRoute (both groups): an HTTPRoute that only meets
//   ports a GRPCRoute of its own namespace holds is not accepted (reason RouteReasonConflicted, as
//   Linkerd writes it);
// - producer routes (in the Service's namespace) serve every client; consumer routes (in another
//   namespace) serve only clients of their own namespace, and there they replace the producer routes.
import type { HttpRouteSpec } from '../resources/http-route.js';
import type { GrpcRouteSpec } from '../resources/grpc-route.js';
import { refersTo } from '../resources/kinds.js';
import type { RouteParent } from '../resources/route-parts.js';
import type { ServiceRecord } from '../resources/service.js';
import type { ResourceStore, RouteKind } from './store.js';

export type AnyRouteSpec = HttpRouteSpec | GrpcRouteSpec;
export type ServiceParent = Extract<RouteParent, { kind: 'service' }>;
export type EgressParent = Extract<RouteParent, { kind: 'egress' }>;

/** What a client's traffic goes to: a Service port, or a port of an address an EgressNetwork classifies. */
export interface ParentTarget {
  /** Absent: a Service. */
  kind?: 'service' | 'egress';
  namespace: string;
  name: string;
  port: number;
}

/** The Gateway API's reasons, and Linkerd's for a route-kind conflict. */
export const REASONS = {
  accepted: 'Accepted',
  noMatchingParent: 'NoMatchingParent',
  unsupportedValue: 'UnsupportedValue',
  conflicted: 'RouteReasonConflicted',
  resolvedRefs: 'ResolvedRefs',
  backendNotFound: 'BackendNotFound',
  invalidKind: 'InvalidKind',
} as const;

export type ParentVerdict =
  { accepted: true; ports: number[]; message: string } | { accepted: false; reason: string; message: string };

const svcName = (p: { namespace: string; name: string }) => `Service ${p.namespace}/${p.name}`;

/** The ports of the Service a parentRef selects, or why it selects none. */
export function selectedPorts(svc: ServiceRecord | undefined, parent: ServiceParent): number[] | string {
  if (!svc) return `${svcName(parent)} does not exist`;
  if (svc.type === 'ExternalName' || svc.clusterIPs.length === 0)
    return `${svcName(parent)} has no ClusterIP (headless or ExternalName): a parent Service must have one`;
  let ports = svc.ports;
  if (parent.port !== undefined) {
    ports = ports.filter((p) => p.port === parent.port);
    if (ports.length === 0)
      return `${svcName(parent)} has no port ${parent.port} (it has ${svc.ports.map((p) => p.port).join(', ') || 'none'})`;
  }
  if (parent.sectionName !== undefined) {
    ports = ports.filter((p) => p.name === parent.sectionName);
    if (ports.length === 0)
      return `${svcName(parent)} has no port named "${parent.sectionName}"${parent.port !== undefined ? ` numbered ${parent.port}` : ''}`;
  }
  return ports.map((p) => p.port);
}

/** Ports of `svc` that GRPCRoutes of `namespace` hold (they win those ports over HTTPRoutes). */
function grpcHeldPorts(store: ResourceStore, svc: ServiceRecord, namespace: string): Set<number> {
  const held = new Set<number>();
  for (const r of store.inNamespace('GRPCRoute', namespace))
    for (const p of r.parents)
      if (p.kind === 'service' && p.namespace === svc.namespace && p.name === svc.name) {
        const ports = selectedPorts(svc, p);
        if (typeof ports !== 'string') for (const port of ports) held.add(port);
      }
  return held;
}

/** Whether a (valid) route attaches through one of its Service parents, and to which ports. */
export function serviceParentVerdict(
  store: ResourceStore,
  kind: RouteKind,
  route: AnyRouteSpec,
  parent: ServiceParent,
): ParentVerdict {
  const svc = store.get('Service', parent.namespace, parent.name);
  const ports = selectedPorts(svc, parent);
  if (typeof ports === 'string') return { accepted: false, reason: REASONS.noMatchingParent, message: ports };
  if (kind === 'GRPCRoute' || !svc) return { accepted: true, ports, message: '' };
  const held = grpcHeldPorts(store, svc, route.meta.namespace);
  const free = ports.filter((p) => !held.has(p));
  const taken = ports.filter((p) => held.has(p));
  if (free.length === 0)
    return {
      accepted: false,
      reason: REASONS.conflicted,
      message: `GRPCRoutes of namespace ${route.meta.namespace} hold ${svcName(parent)} port${taken.length > 1 ? 's' : ''} ${taken.join(', ')} (GRPCRoute wins over HTTPRoute)`,
    };
  return {
    accepted: true,
    ports: free,
    message: taken.length
      ? `not on port${taken.length > 1 ? 's' : ''} ${taken.join(', ')}: GRPCRoutes hold ${taken.length > 1 ? 'them' : 'it'}`
      : '',
  };
}

const egressName = (p: { namespace: string; name: string }) => `EgressNetwork ${p.namespace}/${p.name}`;

/** The GRPCRoute parents of `namespace` on the EgressNetwork: the ports they hold ('any' for a parent without one). */
function grpcHeldEgressPorts(
  store: ResourceStore,
  namespace: string,
  net: { namespace: string; name: string },
): Array<number | 'any'> {
  const held: Array<number | 'any'> = [];
  for (const r of store.inNamespace('GRPCRoute', namespace))
    for (const p of r.parents)
      if (p.kind === 'egress' && p.namespace === net.namespace && p.name === net.name && p.sectionName === undefined)
        held.push(p.port ?? 'any');
  return held;
}

/**
 * Whether a (valid) route attaches through one of its EgressNetwork parents. The EgressNetwork must
 * exist (and be valid); a parentRef `port` limits the route to traffic to that port, none means every
 * port; an EgressNetwork has no sections. As on a Service port, GRPCRoutes of the route's namespace win
 * a port over HTTPRoutes. `ports` is the one port named, or empty for every port.
 */
export function egressParentVerdict(
  store: ResourceStore,
  kind: RouteKind,
  route: AnyRouteSpec,
  parent: EgressParent,
): ParentVerdict {
  if (!store.get('EgressNetwork', parent.namespace, parent.name)) {
    const bad = store
      .invalid()
      .find((p) => p.kind === 'EgressNetwork' && p.namespace === parent.namespace && p.name === parent.name);
    return {
      accepted: false,
      reason: REASONS.noMatchingParent,
      message: bad ? `${egressName(parent)} is not valid (${bad.message})` : `${egressName(parent)} does not exist`,
    };
  }
  if (parent.sectionName !== undefined)
    return {
      accepted: false,
      reason: REASONS.noMatchingParent,
      message: `${egressName(parent)} has no sections (sectionName "${parent.sectionName}")`,
    };
  const ports = parent.port === undefined ? [] : [parent.port];
  if (kind === 'GRPCRoute') return { accepted: true, ports, message: '' };
  const held = grpcHeldEgressPorts(store, route.meta.namespace, parent);
  if (held.includes('any') || (parent.port !== undefined && held.includes(parent.port)))
    return {
      accepted: false,
      reason: REASONS.conflicted,
      message: `GRPCRoutes of namespace ${route.meta.namespace} hold ${egressName(parent)}${parent.port !== undefined ? ` port ${parent.port}` : ''} (GRPCRoute wins over HTTPRoute)`,
    };
  // A parent without a port gives way on the ports GRPCRoutes name (one with a port was checked above).
  const taken = parent.port === undefined ? held.filter((p): p is number => p !== 'any') : [];
  return {
    accepted: true,
    ports,
    message: taken.length
      ? `not on port${taken.length > 1 ? 's' : ''} ${taken.join(', ')}: GRPCRoutes hold ${taken.length > 1 ? 'them' : 'it'}`
      : '',
  };
}

/** Whether the route attaches to the Service port (or EgressNetwork port) through any of its parents. */
export function attachesTo(store: ResourceStore, kind: RouteKind, route: AnyRouteSpec, target: ParentTarget): boolean {
  if (target.kind === 'egress')
    return route.parents.some((p) => {
      if (p.kind !== 'egress' || p.namespace !== target.namespace || p.name !== target.name) return false;
      if (p.port !== undefined && p.port !== target.port) return false;
      if (!egressParentVerdict(store, kind, route, p).accepted) return false;
      // An HTTPRoute without a port gives way on the ports GRPCRoutes of its namespace name.
      return kind === 'GRPCRoute' || !grpcHeldEgressPorts(store, route.meta.namespace, p).includes(target.port);
    });
  return route.parents.some((p) => {
    if (p.kind !== 'service' || p.namespace !== target.namespace || p.name !== target.name) return false;
    const v = serviceParentVerdict(store, kind, route, p);
    return v.accepted && v.ports.includes(target.port);
  });
}

export interface AttachedRoutes {
  /** Whose routes the client gets: "consumer" (its own namespace's) or "producer" (the Service's). */
  role: 'consumer' | 'producer';
  /** Both HTTPRoute groups merged, oldest first (empty when GRPCRoutes hold the port). */
  http: Array<{ kind: 'HTTPRoute' | 'GatewayHTTPRoute'; spec: HttpRouteSpec }>;
  grpc: GrpcRouteSpec[];
}

/** Creation time, then name, then group: the Gateway API's precedence between routes. */
export function byRoutePrecedence(a: AnyRouteSpec, b: AnyRouteSpec): number {
  const ta = a.meta.createdAt;
  const tb = b.meta.createdAt;
  if (ta !== tb) {
    if (!ta) return 1;
    if (!tb) return -1;
    return ta < tb ? -1 : 1;
  }
  if (a.meta.namespace !== b.meta.namespace) return a.meta.namespace < b.meta.namespace ? -1 : 1;
  if (a.meta.name !== b.meta.name) return a.meta.name < b.meta.name ? -1 : 1;
  return a.group < b.group ? -1 : a.group > b.group ? 1 : 0;
}

function attachedIn(store: ResourceStore, namespace: string, target: ParentTarget): Omit<AttachedRoutes, 'role'> {
  const grpc = store
    .inNamespace('GRPCRoute', namespace)
    .filter((r) => attachesTo(store, 'GRPCRoute', r, target))
    .sort(byRoutePrecedence);
  const http = (['HTTPRoute', 'GatewayHTTPRoute'] as const)
    .flatMap((kind) =>
      store
        .inNamespace(kind, namespace)
        .filter((r) => attachesTo(store, kind, r, target))
        .map((spec) => ({ kind, spec })),
    )
    .sort((a, b) => byRoutePrecedence(a.spec, b.spec));
  return { grpc, http: grpc.length > 0 ? [] : http };
}

/**
 * The routes a client in `sourceNamespace` gets for the Service port, or the EgressNetwork port (routes
 * in the EgressNetwork's namespace are its producer routes, those in the client's its consumer routes).
 */
export function attachedRoutes(store: ResourceStore, target: ParentTarget, sourceNamespace: string): AttachedRoutes {
  if (sourceNamespace !== target.namespace) {
    const consumer = attachedIn(store, sourceNamespace, target);
    if (consumer.grpc.length > 0 || consumer.http.length > 0) return { role: 'consumer', ...consumer };
  }
  return { role: 'producer', ...attachedIn(store, target.namespace, target) };
}

/** Every backend reference of a route (rules, backends' own filters' mirrors, rules' mirrors). */
export function backendRefsOf(
  route: AnyRouteSpec,
): Array<{ group: string; kind: string; namespace: string; name: string; port?: number }> {
  const out: Array<{ group: string; kind: string; namespace: string; name: string; port?: number }> = [];
  for (const rule of route.rules) {
    const filters = [...rule.filters, ...rule.backendRefs.flatMap((b) => b.filters)];
    out.push(...rule.backendRefs);
    for (const f of filters) if (f.kind === 'requestMirror') out.push(f.ref);
  }
  return out;
}

export type RefsVerdict = { resolved: true } | { resolved: false; reason: string; message: string };

/** Whether a backend reference names something minimesh can send to, or why not. */
export function backendProblem(
  store: ResourceStore,
  b: { group: string; kind: string; namespace: string; name: string; port?: number },
): { reason: string; message: string } | undefined {
  if (!refersTo(b, '', 'Service'))
    return {
      reason: REASONS.invalidKind,
      message: `backendRef ${b.namespace}/${b.name}: ${b.group || 'core'}/${b.kind} is not a kind minimesh sends to (core/Service)`,
    };
  const svc = store.get('Service', b.namespace, b.name);
  if (!svc) return { reason: REASONS.backendNotFound, message: `backendRef ${svcName(b)} does not exist` };
  if (b.port === undefined)
    return {
      reason: REASONS.backendNotFound,
      message: `backendRef ${svcName(b)} names no port (a Service backendRef needs one)`,
    };
  if (!svc.ports.some((p) => p.port === b.port))
    return { reason: REASONS.backendNotFound, message: `backendRef ${svcName(b)} has no port ${b.port}` };
  return undefined;
}

/** ResolvedRefs: every backend reference resolves; else the first problem (InvalidKind before BackendNotFound). */
export function refsVerdict(store: ResourceStore, route: AnyRouteSpec): RefsVerdict {
  const problems = backendRefsOf(route)
    .map((b) => backendProblem(store, b))
    .filter((p): p is { reason: string; message: string } => p !== undefined);
  if (problems.length === 0) return { resolved: true };
  const first = problems.find((p) => p.reason === REASONS.invalidKind) ?? problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
  return { resolved: false, reason: first.reason, message: `${first.message}${more}` };
}
