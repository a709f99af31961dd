// The parsed resources the index works from, by kind and namespace/name. Untrusted objects are parsed
// on the way in; one that cannot be used is kept out (its older version too) and remembered with the
// reason, so operators and `minimesh authz` can see why it has no effect. Pure: no I/O.
import type { ClusterInfo } from '../cluster-info.js';
import {
  parseMeshTLSAuthentication,
  parseNetworkAuthentication,
  type MeshTLSAuthenticationSpec,
  type NetworkAuthenticationSpec,
} from '../resources/authentications.js';
import { parseAuthorizationPolicy, type AuthorizationPolicySpec } from '../resources/authorization-policy.js';
import { parseEgressNetwork, type EgressNetworkSpec } from '../resources/egress-network.js';
import { describeObject, FieldError } from '../resources/fields.js';
import { parseGrpcRoute, type GrpcRouteSpec } from '../resources/grpc-route.js';
import { parseHttpRoute, type HttpRouteSpec } from '../resources/http-route.js';
import { GATEWAY_GROUP } from '../resources/kinds.js';
import { parseRateLimitPolicy, type RateLimitPolicySpec } from '../resources/ratelimit-policy.js';
import { parseServer, type ServerSpec } from '../resources/server.js';
import { toServiceRecord, type ServiceRecord } from '../resources/service.js';
import { parseTcpRoute, parseTlsRoute, type TcpRouteSpec, type TlsRouteSpec } from '../resources/tls-tcp-route.js';
import { toExternalWorkload, toPodWorkload, type WorkloadRecord } from '../resources/workload.js';

export const INDEXED_KINDS = [
  'Pod',
  'ExternalWorkload',
  'Service',
  'Server',
  'AuthorizationPolicy',
  'MeshTLSAuthentication',
  'NetworkAuthentication',
  'HTTPRoute',
  'GatewayHTTPRoute',
  'GRPCRoute',
  'TLSRoute',
  'TCPRoute',
  'HTTPLocalRateLimitPolicy',
  'EgressNetwork',
] as const;
export type IndexedKind = (typeof INDEXED_KINDS)[number];

/**
 * The route kinds: policy.minimesh.io HTTPRoute, gateway.networking.k8s.io HTTPRoute, GRPCRoute,
 * TLSRoute and TCPRoute.
 */
export const ROUTE_KINDS = ['HTTPRoute', 'GatewayHTTPRoute', 'GRPCRoute', 'TLSRoute', 'TCPRoute'] as const;
export type RouteKind = (typeof ROUTE_KINDS)[number];
export const isRouteKind = (k: IndexedKind): k is RouteKind => (ROUTE_KINDS as readonly string[]).includes(k);

export interface SpecByKind {
  Pod: WorkloadRecord;
  ExternalWorkload: WorkloadRecord;
  Service: ServiceRecord;
  Server: ServerSpec;
  AuthorizationPolicy: AuthorizationPolicySpec;
  MeshTLSAuthentication: MeshTLSAuthenticationSpec;
  NetworkAuthentication: NetworkAuthenticationSpec;
  HTTPRoute: HttpRouteSpec;
  GatewayHTTPRoute: HttpRouteSpec;
  GRPCRoute: GrpcRouteSpec;
  TLSRoute: TlsRouteSpec;
  TCPRoute: TcpRouteSpec;
  HTTPLocalRateLimitPolicy: RateLimitPolicySpec;
  EgressNetwork: EgressNetworkSpec;
}

export interface InvalidResource {
  kind: IndexedKind;
  namespace: string;
  name: string;
  message: string;
  /** A route kind's or EgressNetwork's object as it came (it still gets a status written). */
  object?: unknown;
}

/** namespace → name → spec */
type ByNamespace<T> = Map<string, Map<string, T>>;

export class ResourceStore {
  private readonly data: { [K in IndexedKind]: ByNamespace<SpecByKind[K]> };
  private readonly invalidByKey = new Map<string, InvalidResource>();
  /** ClusterIP → the Services holding it ("ns/name" → record): a Watch by address finds its Service at once. */
  private readonly servicesByIp = new Map<string, Map<string, ServiceRecord>>();

  constructor(readonly cluster: ClusterInfo) {
    this.data = Object.fromEntries(INDEXED_KINDS.map((k) => [k, new Map()])) as never;
  }

  /** Parses and stores one object; returns the problem when it could not be used. */
  apply(kind: IndexedKind, obj: unknown): InvalidResource | undefined {
    let spec: SpecByKind[IndexedKind];
    try {
      spec = this.parse(kind, obj);
    } catch (err) {
      const { namespace, name } = identify(obj);
      const detail = err instanceof FieldError ? err.message : (err as Error).message;
      const problem: InvalidResource = {
        kind,
        namespace,
        name,
        message: `${describeObject(obj, kind === 'GatewayHTTPRoute' ? 'HTTPRoute' : kind)}: ${detail}`,
        ...(isRouteKind(kind) || kind === 'EgressNetwork' ? { object: obj } : {}),
      };
      if (namespace && name) {
        this.remove(kind, namespace, name);
        this.invalidByKey.set(key(kind, namespace, name), problem);
      }
      return problem;
    }
    const { namespace, name } = specIdentity(kind, spec);
    this.invalidByKey.delete(key(kind, namespace, name));
    let ns = this.data[kind].get(namespace);
    if (!ns) this.data[kind].set(namespace, (ns = new Map()));
    if (kind === 'Service') {
      this.unindexIps(ns.get(name) as ServiceRecord | undefined);
      this.indexIps(spec as ServiceRecord);
    }
    (ns as Map<string, unknown>).set(name, spec);
    return undefined;
  }

  /** Removes an object; true when something was removed. */
  delete(kind: IndexedKind, namespace: string, name: string): boolean {
    this.invalidByKey.delete(key(kind, namespace, name));
    return this.remove(kind, namespace, name);
  }

  /** Replaces every object of a kind (a re-list); returns the problems of the new set. */
  reset(kind: IndexedKind, objs: readonly unknown[]): InvalidResource[] {
    this.data[kind].clear();
    if (kind === 'Service') this.servicesByIp.clear();
    for (const k of [...this.invalidByKey.keys()]) if (k.startsWith(`${kind}/`)) this.invalidByKey.delete(k);
    const problems: InvalidResource[] = [];
    for (const o of objs) {
      const p = this.apply(kind, o);
      if (p) problems.push(p);
    }
    return problems;
  }

  get<K extends IndexedKind>(kind: K, namespace: string, name: string): SpecByKind[K] | undefined {
    return this.data[kind].get(namespace)?.get(name) as SpecByKind[K] | undefined;
  }

  /** Every object of a kind in one namespace. */
  inNamespace<K extends IndexedKind>(kind: K, namespace: string): SpecByKind[K][] {
    return [...(this.data[kind].get(namespace)?.values() ?? [])] as SpecByKind[K][];
  }

  /** Every object of a kind. */
  all<K extends IndexedKind>(kind: K): SpecByKind[K][] {
    const out: SpecByKind[K][] = [];
    for (const ns of this.data[kind].values()) for (const v of ns.values()) out.push(v as SpecByKind[K]);
    return out;
  }

  /** The Services holding a cluster IP, in the order of all('Service') (two only while the API reassigns it). */
  servicesWithIp(ip: string): ServiceRecord[] {
    const held = this.servicesByIp.get(ip);
    if (!held) return [];
    if (held.size === 1) return [...held.values()];
    return this.all('Service').filter((s) => s.clusterIPs.includes(ip));
  }

  /** Every object that could not be used (for a route kind, with the object itself). */
  invalid(): InvalidResource[] {
    return [...this.invalidByKey.values()].map(({ object: _o, ...rest }) => rest);
  }

  /** The route objects of a kind that could not be used, as they came. */
  invalidRoutes(kind: RouteKind): Array<InvalidResource & { object: unknown }> {
    return [...this.invalidByKey.values()].filter(
      (p): p is InvalidResource & { object: unknown } => p.kind === kind && p.object !== undefined,
    );
  }

  /** The EgressNetworks that could not be used, as they came (their status says why). */
  invalidEgressNetworks(): Array<InvalidResource & { object: unknown }> {
    return [...this.invalidByKey.values()].filter(
      (p): p is InvalidResource & { object: unknown } => p.kind === 'EgressNetwork' && p.object !== undefined,
    );
  }

  count(kind: IndexedKind): number {
    let n = 0;
    for (const ns of this.data[kind].values()) n += ns.size;
    return n;
  }

  private indexIps(svc: ServiceRecord): void {
    for (const ip of svc.clusterIPs) {
      let held = this.servicesByIp.get(ip);
      if (!held) this.servicesByIp.set(ip, (held = new Map()));
      held.set(`${svc.namespace}/${svc.name}`, svc);
    }
  }

  private unindexIps(svc: ServiceRecord | undefined): void {
    for (const ip of svc?.clusterIPs ?? []) {
      const held = this.servicesByIp.get(ip);
      if (held?.delete(`${svc!.namespace}/${svc!.name}`) && held.size === 0) this.servicesByIp.delete(ip);
    }
  }

  private remove(kind: IndexedKind, namespace: string, name: string): boolean {
    const ns = this.data[kind].get(namespace);
    if (kind === 'Service') this.unindexIps(ns?.get(name) as ServiceRecord | undefined);
    if (!ns?.delete(name)) return false;
    if (ns.size === 0) this.data[kind].delete(namespace);
    return true;
  }

  private parse(kind: IndexedKind, obj: unknown): SpecByKind[IndexedKind] {
    switch (kind) {
      case 'Pod':
        return toPodWorkload(obj);
      case 'ExternalWorkload':
        return toExternalWorkload(obj);
      case 'Service':
        return toServiceRecord(obj);
      case 'Server':
        return parseServer(obj);
      case 'AuthorizationPolicy':
        return parseAuthorizationPolicy(obj);
      case 'MeshTLSAuthentication':
        return parseMeshTLSAuthentication(obj, this.cluster);
      case 'NetworkAuthentication':
        return parseNetworkAuthentication(obj);
      case 'HTTPRoute':
        return parseHttpRoute(obj);
      case 'GatewayHTTPRoute':
        return parseHttpRoute(obj, GATEWAY_GROUP);
      case 'GRPCRoute':
        return parseGrpcRoute(obj);
      case 'TLSRoute':
        return parseTlsRoute(obj);
      case 'TCPRoute':
        return parseTcpRoute(obj);
      case 'HTTPLocalRateLimitPolicy':
        return parseRateLimitPolicy(obj);
      case 'EgressNetwork':
        return parseEgressNetwork(obj, this.cluster.networks);
    }
  }
}

function key(kind: IndexedKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

function identify(obj: unknown): { namespace: string; name: string } {
  const m = (obj as { metadata?: { namespace?: unknown; name?: unknown } } | undefined)?.metadata;
  return {
    namespace: typeof m?.namespace === 'string' ? m.namespace : '',
    name: typeof m?.name === 'string' ? m.name : '',
  };
}

function specIdentity(kind: IndexedKind, spec: SpecByKind[IndexedKind]): { namespace: string; name: string } {
  if (kind === 'Pod' || kind === 'ExternalWorkload' || kind === 'Service') {
    const s = spec as WorkloadRecord | ServiceRecord;
    return { namespace: s.namespace, name: s.name };
  }
  const m = (spec as ServerSpec).meta;
  return { namespace: m.namespace, name: m.name };
}
