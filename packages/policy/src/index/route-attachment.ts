// Which routes attach to which Service port, and why not: the one place that decides it, so the routes
// the controller serves and the status it writes (Accepted, ResolvedRefs) never disagree. Pure
// functions of the store, computed alike by every replica (the leader only writes them down).
//
// The rules, from the Gateway API's mesh mode (GEP-1426/GEP-1294) and Linkerd where the spec is silent:
// - a Service parent must exist and have a ClusterIP (not headless, not ExternalName); a parentRef
//   `port` (or `sectionName`, a port name) must name one of its ports; without either the route
//   attaches to every port;
// - on one Service port (or EgressNetwork port) the route kinds rank GRPCRoute, HTTPRoute (both
//   groups), TLSRoute, TCPRoute (GEP-1426's route types, as Linkerd's status index ranks them:
//   policy-controller/k8s/status/src/index.rs parent_has_conflicting_routes, linkerd2 edge-26.8.3): a
//   route that only meets ports a route of a higher kind of its own namespace holds is not accepted
//   (reason RouteReasonConflicted, as Linkerd writes it);
// - producer routes (in the Service's namespace) serve every client; consumer routes (in another
//   namespace) serve only clients of their own namespace, and there they replace the producer routes.
import type { HttpRouteSpec } from '../resources/http-route.js';
import type { GrpcRouteSpec } from '../resources/grpc-route.js';
import { POLICY_GROUP, refersTo } from '../resources/kinds.js';
import type { RouteParent } from '../resources/route-parts.js';
import type { ServiceRecord } from '../resources/service.js';
import type { TcpRouteSpec, TlsRouteSpec } from '../resources/tls-tcp-route.js';
import type { ResourceStore, RouteKind } from './store.js';

export type AnyRouteSpec = HttpRouteSpec | GrpcRouteSpec | TlsRouteSpec | TcpRouteSpec;

/** The route kinds that win a port over `kind` (GRPCRoute, HTTPRoute of both groups, TLSRoute, TCPRoute). */
export function kindsBeating(kind: RouteKind): RouteKind[] {
  switch (kind) {
    case 'GRPCRoute':
      return [];
    case 'HTTPRoute':
    case 'GatewayHTTPRoute':
      return ['GRPCRoute'];
    case 'TLSRoute':
      return ['GRPCRoute', 'HTTPRoute', 'GatewayHTTPRoute'];
    case 'TCPRoute':
      return ['GRPCRoute', 'HTTPRoute', 'GatewayHTTPRoute', 'TLSRoute'];
  }
}

/** The kind's name in messages (both HTTPRoute groups are "HTTPRoute"). */
const kindName = (kind: RouteKind) => (kind === 'GatewayHTTPRoute' ? 'HTTPRoute' : kind);

/** "GRPCRoutes" or "GRPCRoutes and HTTPRoutes", for the kinds that hold a port. */
function holdersText(kinds: ReadonlySet<RouteKind>): string {
  const names = [...new Set([...kinds].map(kindName))];
  return names.map((n) => `${n}s`).join(' and ');
}

/** "(GRPCRoute wins over HTTPRoute)": the first holder's kind over the route's. */
function winsText(kinds: ReadonlySet<RouteKind>, kind: RouteKind): string {
  return `(${kindName([...kinds][0]!)} wins over ${kindName(kind)})`;
}
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

/** Ports of `svc` that routes of `namespace` of a kind beating `kind` hold, each with the kinds holding it. */
function heldPorts(
  store: ResourceStore,
  kind: RouteKind,
  svc: ServiceRecord,
  namespace: string,
): Map<number, Set<RouteKind>> {
  const held = new Map<number, Set<RouteKind>>();
  for (const k of kindsBeating(kind))
    for (const r of store.inNamespace(k, namespace) as AnyRouteSpec[])
      for (const p of r.parents)
        if (p.kind === 'service' && p.namespace === svc.namespace && p.name === svc.name) {
          const selected = selectedPorts(svc, p);
          if (typeof selected === 'string') continue;
          for (const port of selected) {
            let kinds = held.get(port);
            if (!kinds) held.set(port, (kinds = new Set()));
            kinds.add(k);
          }
        }
  return held;
}

/** The kinds holding any of `ports`, highest first. */
function holdersOf(held: Map<number, Set<RouteKind>>, ports: readonly number[], kind: RouteKind): Set<RouteKind> {
  const all = new Set(ports.flatMap((p) => [...(held.get(p) ?? [])]));
  return new Set(kindsBeating(kind).filter((k) => all.has(k)));
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
  const held = heldPorts(store, kind, svc, route.meta.namespace);
  const free = ports.filter((p) => !held.has(p));
  const taken = ports.filter((p) => held.has(p));
  const by = holdersOf(held, taken, kind);
  if (free.length === 0)
    return {
      accepted: false,
      reason: REASONS.conflicted,
      message: `${holdersText(by)} of namespace ${route.meta.namespace} hold ${svcName(parent)} port${taken.length > 1 ? 's' : ''} ${taken.join(', ')} ${winsText(by, kind)}`,
    };
  return {
    accepted: true,
    ports: free,
    message: taken.length
      ? `not on port${taken.length > 1 ? 's' : ''} ${taken.join(', ')}: ${holdersText(by)} hold ${taken.length > 1 ? 'them' : 'it'}`
      : '',
  };
}

const egressName = (p: { namespace: string; name: string }) => `EgressNetwork ${p.namespace}/${p.name}`;

/**
 * The parents on the EgressNetwork of routes of `namespace` of a kind beating `kind`: the ports they
 * hold ('any' for a parent without one), and which kinds hold them.
 */
function heldEgressPorts(
  store: ResourceStore,
  kind: RouteKind,
  namespace: string,
  net: { namespace: string; name: string },
): Array<{ port: number | 'any'; kind: RouteKind }> {
  const held: Array<{ port: number | 'any'; kind: RouteKind }> = [];
  for (const k of kindsBeating(kind))
    for (const r of store.inNamespace(k, namespace) as AnyRouteSpec[])
      for (const p of r.parents)
        if (p.kind === 'egress' && p.namespace === net.namespace && p.name === net.name && p.sectionName === undefined)
          held.push({ port: p.port ?? 'any', kind: k });
  return held;
}

/**
 * Whether a (valid) route attaches through one of its EgressNetwork parents. The EgressNetwork must
 * exist (and be valid); a parentRef `port` limits the route to traffic to that port, none means every
 * port; an EgressNetwork has no sections. As on a Service port, routes of a higher kind of the route's
 * namespace win a port (GRPCRoute, HTTPRoute, TLSRoute, TCPRoute). `ports` is the one port named, or
 * empty for every port.
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
  const held = heldEgressPorts(store, kind, route.meta.namespace, parent);
  const clash = held.filter((h) => h.port === 'any' || (parent.port !== undefined && h.port === parent.port));
  if (clash.length > 0) {
    const holders = new Set(clash.map((h) => h.kind));
    return {
      accepted: false,
      reason: REASONS.conflicted,
      message: `${holdersText(holders)} of namespace ${route.meta.namespace} hold ${egressName(parent)}${parent.port !== undefined ? ` port ${parent.port}` : ''} ${winsText(holders, kind)}`,
    };
  }
  // A parent without a port gives way on the ports routes of higher kinds name (one with a port was
  // checked above).
  const taking = parent.port === undefined ? held.filter((h) => h.port !== 'any') : [];
  const taken = [...new Set(taking.map((h) => h.port as number))].sort((a, b) => a - b);
  return {
    accepted: true,
    ports,
    message: taken.length
      ? `not on port${taken.length > 1 ? 's' : ''} ${taken.join(', ')}: ${holdersText(new Set(taking.map((h) => h.kind)))} hold ${taken.length > 1 ? 'them' : 'it'}`
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
      // A route without a port gives way on the ports routes of higher kinds of its namespace name.
      return !heldEgressPorts(store, kind, route.meta.namespace, p).some((h) => h.port === target.port);
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
  /** TLSRoutes, oldest first (empty when GRPCRoutes or HTTPRoutes hold the port). */
  tls: TlsRouteSpec[];
  /** TCPRoutes, oldest first (empty when routes of any other kind hold the port). */
  tcp: TcpRouteSpec[];
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
  const tls = store
    .inNamespace('TLSRoute', namespace)
    .filter((r) => attachesTo(store, 'TLSRoute', r, target))
    .sort(byRoutePrecedence);
  const tcp = store
    .inNamespace('TCPRoute', namespace)
    .filter((r) => attachesTo(store, 'TCPRoute', r, target))
    .sort(byRoutePrecedence);
  // The first kind that has routes takes the port (attachesTo already keeps the others out; this holds
  // it for the answer whatever the parents say).
  const h = grpc.length > 0;
  const t = h || http.length > 0;
  const c = t || tls.length > 0;
  return { grpc, http: h ? [] : http, tls: t ? [] : tls, tcp: c ? [] : tcp };
}

/**
 * The routes a client in `sourceNamespace` gets for the Service port, or the EgressNetwork port (routes
 * in the EgressNetwork's namespace are its producer routes, those in the client's its consumer routes).
 */
export function attachedRoutes(store: ResourceStore, target: ParentTarget, sourceNamespace: string): AttachedRoutes {
  if (sourceNamespace !== target.namespace) {
    const consumer = attachedIn(store, sourceNamespace, target);
    const any = consumer.grpc.length + consumer.http.length + consumer.tls.length + consumer.tcp.length > 0;
    if (any) return { role: 'consumer', ...consumer };
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

/** A backendRef of kind EgressNetwork (policy.minimesh.io). */
export const isEgressBackend = (b: { group: string; kind: string }) => refersTo(b, POLICY_GROUP, 'EgressNetwork');

/**
 * Whether a backend reference names something minimesh can send to, or why not. `parent`, when given,
 * is the route's parent the answer is for: an EgressNetwork backendRef resolves only on a route whose
 * parent is that same EgressNetwork (traffic goes on to the original destination), as in Linkerd
 * (policy-controller/k8s/status/src/index.rs backend_condition, linkerd2 edge-26.8.3).
 */
export function backendProblem(
  store: ResourceStore,
  b: { group: string; kind: string; namespace: string; name: string; port?: number },
  parent?: RouteParent,
): { reason: string; message: string } | undefined {
  if (isEgressBackend(b)) {
    if (!store.get('EgressNetwork', b.namespace, b.name))
      return { reason: REASONS.backendNotFound, message: `backendRef ${egressName(b)} does not exist` };
    if (parent && !(parent.kind === 'egress' && parent.namespace === b.namespace && parent.name === b.name))
      return {
        reason: REASONS.invalidKind,
        message: `backendRef ${egressName(b)}: EgressNetwork backend needs to be on a route that has an EgressNetwork parent (the same EgressNetwork)`,
      };
    return undefined;
  }
  if (!refersTo(b, '', 'Service'))
    return {
      reason: REASONS.invalidKind,
      message: `backendRef ${b.namespace}/${b.name}: ${b.group || 'core'}/${b.kind} is not a kind minimesh sends to (core/Service, or ${POLICY_GROUP}/EgressNetwork on its own EgressNetwork parent)`,
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

/**
 * ResolvedRefs for one parent of the route: every backend reference resolves; else the first problem
 * (InvalidKind before BackendNotFound).
 */
export function refsVerdict(store: ResourceStore, route: AnyRouteSpec, parent?: RouteParent): RefsVerdict {
  const problems = backendRefsOf(route)
    .map((b) => backendProblem(store, b, parent))
    .filter((p): p is { reason: string; message: string } => p !== undefined);
  if (problems.length === 0) return { resolved: true };
  const first = problems.find((p) => p.reason === REASONS.invalidKind) ?? problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
  return { resolved: false, reason: first.reason, message: `${first.message}${more}` };
}
