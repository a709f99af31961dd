// What a workload's port admits: the Server that selects it (the oldest, then by name, when several
// do), its AuthorizationPolicies and HTTPRoutes; or, when no Server selects it, the workload's default
// policy. Pure functions of the store, as Linkerd's index computes them.
import { portInRanges } from '@minimesh/config';
import { defaultAuthorizations, requireIdentity, ALL_NETWORKS } from '../defaults.js';
import type {
  HttpFilter,
  ClientAuthentication,
  ClientAuthorization,
  DefaultPolicyName,
  InboundHttpRoute,
  InboundServer,
  NetworkMatch,
} from '../model.js';
import type { AuthorizationPolicySpec } from '../resources/authorization-policy.js';
import { byCreationThenName } from '../resources/fields.js';
import { serviceAccountIdentity } from '../cluster-info.js';
import type { HttpRouteSpec } from '../resources/http-route.js';
import { selectorMatches } from '../resources/selector.js';
import { toInboundProtocol, type ServerSpec } from '../resources/server.js';
import type { WorkloadRecord } from '../resources/workload.js';
import type { ResourceStore } from './store.js';

/** Why a policy resource does not take part, for diagnostics ("<kind> <ns>/<name>: <why>"). */
export interface Ignored {
  kind: 'AuthorizationPolicy' | 'HTTPRoute' | 'Server' | 'HTTPLocalRateLimitPolicy';
  namespace: string;
  name: string;
  reason: string;
}

export interface InboundResult {
  server: InboundServer;
  /** Servers that also select the port but lost to an older one (conflicts). */
  conflicting: string[];
  ignored: Ignored[];
}

/** The ports a Server selects on a workload (a port name may map to several numbers). */
export function serverPorts(server: ServerSpec, w: WorkloadRecord): number[] {
  return typeof server.port === 'number' ? [server.port] : (w.portNames[server.port] ?? []);
}

export function serverSelects(server: ServerSpec, w: WorkloadRecord): boolean {
  const kindOk = (server.selector.kind === 'pod') === (w.kind === 'pod');
  return kindOk && selectorMatches(server.selector.selector, w.labels);
}

/** The Servers selecting the workload's port, oldest first (the first one wins). */
export function serversForPort(store: ResourceStore, w: WorkloadRecord, port: number): ServerSpec[] {
  return store
    .inNamespace('Server', w.namespace)
    .filter((s) => serverSelects(s, w) && serverPorts(s, w).includes(port))
    .sort((a, b) => byCreationThenName(a.meta, b.meta));
}

export function computeInbound(store: ResourceStore, w: WorkloadRecord, port: number): InboundResult {
  const cluster = store.cluster;
  const probePaths = w.probes[port] ?? [];
  const [server, ...others] = serversForPort(store, w, port);
  const ignored: Ignored[] = [];
  if (!server) {
    let policy: DefaultPolicyName = w.defaultPolicy ?? cluster.defaultPolicy;
    if (portInRanges(port, w.requireIdentityPorts)) policy = requireIdentity(policy);
    const opaque = portInRanges(port, w.opaquePorts ?? cluster.defaultOpaquePorts);
    return {
      server: {
        ref: { kind: 'default', name: policy },
        protocol: opaque ? { kind: 'opaque' } : { kind: 'detect', timeoutMs: cluster.defaultDetectTimeoutMs },
        authorizations: defaultAuthorizations(policy, cluster),
        httpRoutes: defaultRoutes(store, probePaths),
      },
      conflicting: [],
      ignored,
    };
  }

  const name = server.meta.name;
  const authorizations: ClientAuthorization[] = [];
  for (const ap of policiesInNamespace(store, w.namespace)) {
    const t = ap.target;
    if (!((t.kind === 'server' && t.name === name) || t.kind === 'namespace')) continue;
    const authz = resolvePolicy(store, ap);
    if (typeof authz === 'string') ignored.push(ignoredPolicy(ap, authz));
    else authorizations.push(authz);
  }
  if (server.accessPolicy) authorizations.push(...defaultAuthorizations(server.accessPolicy, cluster));

  const routes = store
    .inNamespace('HTTPRoute', w.namespace)
    .filter((r) => r.parents.some((p) => p.kind === 'server' && p.name === name))
    .sort((a, b) => byCreationThenName(a.meta, b.meta))
    .map((r) => toInboundRoute(store, r, ignored));

  // As Linkerd's status controller accepts one HTTPLocalRateLimitPolicy per Server: the oldest (then
  // by name); the others are ignored for it.
  const [limit, ...extraLimits] = store
    .inNamespace('HTTPLocalRateLimitPolicy', w.namespace)
    .filter((l) => l.server === name)
    .sort((a, b) => byCreationThenName(a.meta, b.meta));
  for (const l of extraLimits)
    ignored.push({
      kind: 'HTTPLocalRateLimitPolicy',
      namespace: l.meta.namespace,
      name: l.meta.name,
      reason: `Server ${name} already has the older HTTPLocalRateLimitPolicy ${limit!.meta.name}`,
    });

  return {
    server: {
      ref: { kind: 'server', name },
      protocol: toInboundProtocol(server.proxyProtocol, cluster.defaultDetectTimeoutMs),
      authorizations: sortAuthorizations(authorizations),
      httpRoutes: routes.length > 0 ? routes : defaultRoutes(store, probePaths),
      ...(limit
        ? {
            rateLimit: {
              name: limit.meta.name,
              namespace: limit.meta.namespace,
              ...(limit.total !== undefined ? { total: limit.total } : {}),
              ...(limit.identity !== undefined ? { identity: limit.identity } : {}),
              overrides: limit.overrides.map((o) => ({
                requestsPerSecond: o.requestsPerSecond,
                identities: o.clients.map((c) => serviceAccountIdentity(cluster, c.namespace, c.name)),
              })),
            },
          }
        : {}),
    },
    conflicting: others.map((s) => s.meta.name),
    ignored,
  };
}

function policiesInNamespace(store: ResourceStore, ns: string): AuthorizationPolicySpec[] {
  return store.inNamespace('AuthorizationPolicy', ns).sort((a, b) => (a.meta.name < b.meta.name ? -1 : 1));
}

function ignoredPolicy(ap: AuthorizationPolicySpec, reason: string): Ignored {
  return { kind: 'AuthorizationPolicy', namespace: ap.meta.namespace, name: ap.meta.name, reason };
}

function toInboundRoute(store: ResourceStore, r: HttpRouteSpec, ignored: Ignored[]): InboundHttpRoute {
  const authorizations: ClientAuthorization[] = [];
  for (const ap of policiesInNamespace(store, r.meta.namespace)) {
    if (ap.target.kind !== 'httproute' || ap.target.name !== r.meta.name) continue;
    const authz = resolvePolicy(store, ap);
    if (typeof authz === 'string') ignored.push(ignoredPolicy(ap, authz));
    else authorizations.push(authz);
  }
  return {
    ref: { kind: 'resource', group: 'policy.minimesh.io', resourceKind: 'HTTPRoute', name: r.meta.name },
    hostnames: r.hostnames,
    rules: r.rules.map((rule) => ({
      matches: rule.matches,
      // Inbound, responses are not edited (as Linkerd's inbound routes); a policy.minimesh.io route has
      // no URLRewrite or RequestMirror to keep.
      filters: rule.filters.filter(
        (f): f is Extract<HttpFilter, { kind: 'requestHeaderModifier' | 'requestRedirect' }> =>
          f.kind === 'requestHeaderModifier' || f.kind === 'requestRedirect',
      ),
    })),
    authorizations: sortAuthorizations(authorizations),
  };
}

/**
 * The "default" route (every request; the server's authorizations apply) and, when the port has HTTP
 * probes, the "probe" route: GET on exactly those paths, admitted unauthenticated from the probe networks.
 */
export function defaultRoutes(store: ResourceStore, probePaths: readonly string[]): InboundHttpRoute[] {
  const routes: InboundHttpRoute[] = [
    {
      ref: { kind: 'default', name: 'default' },
      hostnames: [],
      rules: [{ matches: [{ path: { kind: 'prefix', value: '/' }, headers: [], queryParams: [] }], filters: [] }],
      authorizations: [],
    },
  ];
  const probeNetworks = store.cluster.probeNetworks;
  if (probePaths.length > 0 && probeNetworks.length > 0) {
    routes.push({
      ref: { kind: 'default', name: 'probe' },
      hostnames: [],
      rules: [
        {
          matches: probePaths.map((p) => ({
            path: { kind: 'exact' as const, value: p },
            headers: [],
            queryParams: [],
            method: 'GET',
          })),
          filters: [],
        },
      ],
      authorizations: [
        {
          ref: { kind: 'default', name: 'probe' },
          networks: probeNetworks.map((net) => ({ net, except: [] })),
          authentication: { kind: 'unauthenticated' },
        },
      ],
    });
  }
  return routes;
}

/**
 * An AuthorizationPolicy as one authorization: the identities of its MeshTLSAuthentication or
 * ServiceAccount (none: unauthenticated), from the networks of its NetworkAuthentication (none: every
 * network). A reference that does not resolve makes the whole policy void (a string says why).
 */
export function resolvePolicy(store: ResourceStore, ap: AuthorizationPolicySpec): ClientAuthorization | string {
  const ns = ap.meta.namespace;
  let authentication: ClientAuthentication = { kind: 'unauthenticated' };
  let networks: NetworkMatch[] = ALL_NETWORKS.map((net) => ({ net, except: [] }));
  for (const ref of ap.authentications) {
    const refNs = ref.namespace ?? ns;
    if (ref.kind === 'meshtls') {
      const m = store.get('MeshTLSAuthentication', refNs, ref.name);
      if (!m) return `MeshTLSAuthentication ${refNs}/${ref.name} does not exist`;
      authentication = {
        kind: 'tls-authenticated',
        identities: m.matches.flatMap((x) => (x.kind === 'exact' ? [x.name] : [])),
        suffixes: m.matches.flatMap((x) => (x.kind === 'suffix' ? [x.parts] : [])),
      };
    } else if (ref.kind === 'serviceaccount') {
      const id = `${ref.name}.${refNs}.serviceaccount.identity.${store.cluster.controlPlaneNamespace}.${store.cluster.identityDomain}`;
      authentication = { kind: 'tls-authenticated', identities: [id], suffixes: [] };
    } else {
      const n = store.get('NetworkAuthentication', refNs, ref.name);
      if (!n) return `NetworkAuthentication ${refNs}/${ref.name} does not exist`;
      networks = n.networks;
    }
  }
  return { ref: { kind: 'authorizationpolicy', name: ap.meta.name }, networks, authentication };
}

function sortAuthorizations(list: ClientAuthorization[]): ClientAuthorization[] {
  const rank = (a: ClientAuthorization) => `${a.ref.kind === 'default' ? '1' : '0'}/${a.ref.name}`;
  return list.sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));
}
