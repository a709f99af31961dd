// Inbound authorization over the proxy API's form (inbound.Server), as linkerd2-proxy enforces it:
// compiled once per policy update, then checked per connection (opaque, TLS, undetected traffic) and per
// request (HTTP, gRPC). A request is admitted by its route's authorizations or the server's; traffic
// from localhost is always admitted. A policy that cannot be compiled admits nothing (it never opens).
// minimesh-proxy and `minimesh explain` both use this module.
import {
  ipNetworkContains,
  parseCidr,
  parseIp,
  toIpNetwork,
  unmapIpv4,
  type IpNetwork,
  type IpValue,
} from '@minimesh/config';
import type { inbound, meta as metaProto } from '@minimesh/proto';
import { ALL_NETWORKS, defaultAuthorizations } from '../defaults.js';
import type { DefaultPolicyName } from '../model.js';
import { toProtoAuthz } from '../server/inbound-translator.js';
import { fromIpNetwork } from './ip-network.js';
import {
  compileHosts,
  compileMatch,
  findRoute,
  type CompiledMatch,
  type CompiledRouteBase,
  type RequestView,
} from './http-match.js';

/** group/kind/name of a server, route or authorization: the srv_*, route_*, authz_* metric labels. */
export interface PolicyMeta {
  group: string;
  kind: string;
  name: string;
}

/** What authorization looks at in a client: its address and what its TLS proved. */
export interface ClientInfo {
  ip: string;
  /** Mesh TLS terminated by this proxy. */
  tls: boolean;
  /** The client's verified mesh identity (mutual TLS). */
  identity?: string | undefined;
  /** ip already parsed (a proxy parses it once per connection); else it is parsed per check. */
  parsedIp?: IpValue | undefined;
}

/**
 * A client's address as authorization compares it (@minimesh/config's parseIp): an IPv4 peer that a
 * dual-stack socket reports as ::ffff:a.b.c.d is that IPv4 address. Undefined when it is not an IP.
 */
export function parseClientIp(ip: string): IpValue | undefined {
  const v = parseIp(ip);
  return v && unmapIpv4(v);
}

export interface CompiledAuthz {
  meta: PolicyMeta;
  test(client: ClientInfo, ip: IpValue | undefined): boolean;
}

export type InboundRouteFilter =
  | { kind: 'requestHeaders'; add: Array<[string, string]>; set: Array<[string, string]>; remove: string[] }
  | { kind: 'redirect'; redirect: inbound.HttpRoute_Filter['kind'] & { $case: 'redirect' } }
  | { kind: 'fail'; status: number; message: string; ratio: number };

export interface CompiledInboundRoute extends CompiledRouteBase {
  meta: PolicyMeta;
  /** The route's authorizations, then the server's, then localhost. */
  authorizations: CompiledAuthz[];
  rules: Array<{ matches: CompiledMatch[]; filters: InboundRouteFilter[] }>;
}

export type InboundProtocolKind = 'detect' | 'http1' | 'http2' | 'grpc' | 'opaque' | 'tls';

export interface CompiledServerPolicy {
  meta: PolicyMeta;
  protocol: InboundProtocolKind;
  detectTimeoutMs: number;
  /** Who may open a connection that is not HTTP (opaque, TLS, or undetected); localhost included. */
  tcpAuthorizations: CompiledAuthz[];
  /** HTTP routes (detect, HTTP/1, HTTP/2) or gRPC routes (gRPC). */
  routes: CompiledInboundRoute[];
  /** The Server's HTTP rate limit (HTTPLocalRateLimitPolicy); absent: none. */
  rateLimit?: CompiledRateLimit;
  /** Set when the policy could not be compiled: nothing is admitted, requests fail with 500. */
  invalid?: string;
}

/**
 * An HTTP local rate limit as linkerd2-proxy reads it (requests per second; a 0 limit is none):
 * `total` over every request, `identity` per client identity (clients without one share one), and
 * `overrides` by identity, each override one limit shared by the identities it names.
 */
export interface CompiledRateLimit {
  meta: PolicyMeta;
  total?: number;
  identity?: number;
  /** Identity → its override (the same object for the identities of one override). */
  overrides: Map<string, { requestsPerSecond: number }>;
}

const LOCALHOST_META: PolicyMeta = { group: '', kind: 'default', name: 'localhost' };
const LOOPBACK: IpNetwork[] = ['127.0.0.1/32', '::1/128'].map((c) => toIpNetwork(parseCidr('loopback', c)));

const localhost: CompiledAuthz = {
  meta: LOCALHOST_META,
  test: (_c, ip) => ip !== undefined && LOOPBACK.some((n) => ipNetworkContains(n, ip)),
};

export function metaFromProto(m: metaProto.Metadata | undefined, fallback: PolicyMeta): PolicyMeta {
  const k = m?.kind;
  if (!k) return fallback;
  if (k.$case === 'default') return { group: '', kind: 'default', name: k.value };
  return { group: k.value.group, kind: k.value.kind, name: k.value.name };
}

function metaFromLabels(labels: Record<string, string>, group: string, kind: string): PolicyMeta {
  const name = labels.name ?? '';
  if (labels.kind === 'default') return { group: '', kind: 'default', name };
  return { group: labels.group ?? group, kind: labels.kind ?? kind, name };
}

function compileAuthz(a: inbound.Authz): CompiledAuthz {
  const meta = a.metadata
    ? metaFromProto(a.metadata, LOCALHOST_META)
    : metaFromLabels(a.labels, 'policy.linkerd.io', 'serverauthorization');
  if (a.networks.length === 0) throw new Error(`authorization ${meta.name}: no networks`);
  const networks = a.networks.map((n) => ({
    net: fromIpNetwork(n.net),
    except: n.except.map((e) => fromIpNetwork(e)),
  }));
  const inNetworks = (ip: IpValue | undefined): boolean =>
    ip !== undefined &&
    networks.some((n) => ipNetworkContains(n.net, ip) && !n.except.some((e) => ipNetworkContains(e, ip)));
  const permit = a.authentication?.permit;
  if (!permit) throw new Error(`authorization ${meta.name}: no authentication`);
  if (permit.$case === 'unauthenticated') return { meta, test: (_c, ip) => inNetworks(ip) };
  const clients = permit.value.clients;
  if (!clients) throw new Error(`authorization ${meta.name}: mesh TLS without clients`);
  if (clients.$case === 'unauthenticated') return { meta, test: (c, ip) => c.tls && inNetworks(ip) };
  const identities = new Set(clients.value.identities.map((i) => i.name));
  const suffixes = clients.value.suffixes.map((s) => (s.parts.length === 0 ? '' : `.${s.parts.join('.')}`));
  const anyIdentity = suffixes.includes('');
  return {
    meta,
    test: (c, ip) => {
      if (!c.tls || !c.identity || !inNetworks(ip)) return false;
      const id = c.identity;
      return anyIdentity || identities.has(id) || suffixes.some((s) => id.endsWith(s) && id.length > s.length);
    },
  };
}

function compileHttpFilter(f: inbound.HttpRoute_Filter): InboundRouteFilter {
  const k = f.kind;
  if (!k) throw new Error('route filter without a kind');
  if (k.$case === 'requestHeaderModifier') {
    const pairs = (h: { headers: Array<{ name: string; value: Uint8Array }> } | undefined): Array<[string, string]> =>
      (h?.headers ?? []).map((x) => [x.name.toLowerCase(), Buffer.from(x.value).toString('latin1')]);
    return {
      kind: 'requestHeaders',
      add: pairs(k.value.add),
      set: pairs(k.value.set),
      remove: k.value.remove.map((r) => r.toLowerCase()),
    };
  }
  if (k.$case === 'redirect') return { kind: 'redirect', redirect: k };
  const ratio = k.value.ratio ? k.value.ratio.numerator / Math.max(1, k.value.ratio.denominator) : 1;
  return { kind: 'fail', status: k.value.status, message: k.value.message, ratio };
}

function compileHttpRoute(r: inbound.HttpRoute, server: CompiledAuthz[]): CompiledInboundRoute {
  if (r.rules.length === 0) throw new Error('HTTP route without rules');
  return {
    meta: metaFromProto(r.metadata, { group: '', kind: 'default', name: 'default' }),
    hosts: compileHosts(r.hosts),
    authorizations: [...r.authorizations.map(compileAuthz), ...server],
    rules: r.rules.map((rule) => ({
      matches: rule.matches.map(compileMatch),
      filters: rule.filters.map(compileHttpFilter),
    })),
  };
}

function compileGrpcRoute(r: inbound.GrpcRoute, server: CompiledAuthz[]): CompiledInboundRoute {
  if (r.rules.length === 0) throw new Error('gRPC route without rules');
  return {
    meta: metaFromProto(r.metadata, { group: '', kind: 'default', name: 'default' }),
    hosts: compileHosts(r.hosts),
    authorizations: [...r.authorizations.map(compileAuthz), ...server],
    rules: r.rules.map((rule) => ({
      matches: rule.matches.map((m) => {
        const service = m.rpc?.service ?? '';
        const method = m.rpc?.method ?? '';
        const headers = m.headers.map((h) => compileMatch({ headers: [h], queryParams: [] }));
        const score = [service ? 1 : 0, method ? 1 : 0, m.headers.length];
        return {
          score: (req: RequestView) => {
            const [, svc = '', meth = ''] = req.path.split('/');
            if ((service && svc !== service) || (method && meth !== method)) return undefined;
            return headers.every((h) => h.score(req) !== undefined) ? score : undefined;
          },
        };
      }),
      filters: rule.filters.map((f): InboundRouteFilter => {
        const k = f.kind;
        if (k?.$case === 'failureInjector') {
          const ratio = k.value.ratio ? k.value.ratio.numerator / Math.max(1, k.value.ratio.denominator) : 1;
          return { kind: 'fail', status: k.value.code, message: k.value.message, ratio };
        }
        if (k?.$case === 'requestHeaderModifier') return compileHttpFilter({ kind: k });
        throw new Error('gRPC route filter without a kind');
      }),
    })),
  };
}

/** Compiles a policy from the controller; an invalid one admits nothing and says why. */
export function compileRateLimit(l: inbound.HttpLocalRateLimit | undefined): CompiledRateLimit | undefined {
  if (l === undefined) return undefined;
  const meta = metaFromProto(l.metadata, { group: '', kind: 'default', name: 'ratelimit' });
  const overrides = new Map<string, { requestsPerSecond: number }>();
  for (const o of l.overrides) {
    const rps = o.limit?.requestsPerSecond ?? 0;
    if (rps <= 0) continue;
    const limit = { requestsPerSecond: rps };
    for (const id of o.clients?.identities ?? []) if (id.name) overrides.set(id.name, limit);
  }
  const total = l.total?.requestsPerSecond ?? 0;
  const identity = l.identity?.requestsPerSecond ?? 0;
  if (total <= 0 && identity <= 0 && overrides.size === 0) return undefined;
  return { meta, ...(total > 0 ? { total } : {}), ...(identity > 0 ? { identity } : {}), overrides };
}

const withRateLimit = (l: inbound.HttpLocalRateLimit | undefined): { rateLimit?: CompiledRateLimit } => {
  const c = compileRateLimit(l);
  return c ? { rateLimit: c } : {};
};

export function compileServerPolicy(s: inbound.Server): CompiledServerPolicy {
  const meta = metaFromLabels(s.labels, 'policy.linkerd.io', 'server');
  try {
    const server = [...s.authorizations.map(compileAuthz), localhost];
    const kind = s.protocol?.kind;
    if (!kind) throw new Error('no protocol');
    const base = { meta, tcpAuthorizations: server, detectTimeoutMs: 10_000 };
    // A server without routes (an older controller) gets one route for every request.
    const routesOf = (routes: inbound.HttpRoute[]) =>
      routes.length ? routes.map((r) => compileHttpRoute(r, server)) : [defaultRoute(server)];
    switch (kind.$case) {
      case 'detect': {
        const t = kind.value.timeout;
        const ms = t ? Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6) : NaN;
        if (!Number.isFinite(ms)) throw new Error('detect without a timeout');
        return {
          ...base,
          protocol: 'detect',
          detectTimeoutMs: ms,
          routes: routesOf(kind.value.httpRoutes),
          ...withRateLimit(kind.value.httpLocalRateLimit),
        };
      }
      case 'http1':
        return {
          ...base,
          protocol: 'http1',
          routes: routesOf(kind.value.routes),
          ...withRateLimit(kind.value.localRateLimit),
        };
      case 'http2':
        return {
          ...base,
          protocol: 'http2',
          routes: routesOf(kind.value.routes),
          ...withRateLimit(kind.value.localRateLimit),
        };
      case 'grpc':
        return {
          ...base,
          protocol: 'grpc',
          routes: kind.value.routes.length
            ? kind.value.routes.map((r) => compileGrpcRoute(r, server))
            : [defaultRoute(server)],
        };
      case 'opaque':
        return { ...base, protocol: 'opaque', routes: [] };
      case 'tls':
        return { ...base, protocol: 'tls', routes: [] };
    }
  } catch (err) {
    return invalidPolicy(meta, (err as Error).message);
  }
}

function invalidPolicy(meta: PolicyMeta, why: string): CompiledServerPolicy {
  return { meta, protocol: 'detect', detectTimeoutMs: 10_000, tcpAuthorizations: [], routes: [], invalid: why };
}

function defaultRoute(server: CompiledAuthz[]): CompiledInboundRoute {
  return {
    meta: { group: '', kind: 'default', name: 'default' },
    hosts: [],
    authorizations: server,
    rules: [{ matches: [], filters: [] }],
  };
}

/**
 * The proxy's configured default (LINKERD2_PROXY_INBOUND_DEFAULT_POLICY's counterpart), used for a
 * port until the controller answers, and for good when it never does. As in linkerd2-proxy: deny is an
 * opaque server with no authorizations (connections are closed); the others detect the protocol and
 * admit what the policy admits on every route; on opaque ports they are opaque.
 */
export function compileDefaultPolicy(
  name: DefaultPolicyName,
  opts: { clusterNetworks: readonly string[]; detectTimeoutMs: number; opaque: boolean },
): CompiledServerPolicy {
  const meta: PolicyMeta = { group: '', kind: 'default', name };
  if (name === 'deny')
    return {
      meta,
      protocol: 'opaque',
      detectTimeoutMs: opts.detectTimeoutMs,
      tcpAuthorizations: [localhost],
      routes: [],
    };
  const authzs = defaultAuthorizations(name === 'audit' ? 'all-unauthenticated' : name, {
    networks: [...opts.clusterNetworks],
  }).map((a) => compileAuthz(toProtoAuthz({ ...a, ref: { kind: 'default', name } }, ALL_NETWORKS)));
  const server = [...authzs, localhost];
  return {
    meta,
    protocol: opts.opaque ? 'opaque' : 'detect',
    detectTimeoutMs: opts.detectTimeoutMs,
    tcpAuthorizations: server,
    routes: opts.opaque ? [] : [defaultRoute(server)],
  };
}

/** The authorization admitting a connection (not HTTP), or undefined: close it. */
export function authorizeConnection(p: CompiledServerPolicy, client: ClientInfo): CompiledAuthz | undefined {
  const ip = client.parsedIp ?? parseClientIp(client.ip);
  for (const a of p.tcpAuthorizations) if (a.test(client, ip)) return a;
  return undefined;
}

export type RequestDecision =
  | { kind: 'allow'; route: CompiledInboundRoute; rule: CompiledInboundRoute['rules'][number]; authz: CompiledAuthz }
  | { kind: 'deny'; route: CompiledInboundRoute }
  | { kind: 'no-route' }
  | { kind: 'invalid'; reason: string };

/** Finds the request's route and the authorization admitting it. */
export function authorizeRequest(p: CompiledServerPolicy, client: ClientInfo, req: RequestView): RequestDecision {
  if (p.invalid !== undefined) return { kind: 'invalid', reason: p.invalid };
  const hit = findRoute(p.routes, req);
  if (!hit) return { kind: 'no-route' };
  const ip = client.parsedIp ?? parseClientIp(client.ip);
  for (const a of hit.route.authorizations)
    if (a.test(client, ip)) return { kind: 'allow', route: hit.route, rule: hit.rule, authz: a };
  return { kind: 'deny', route: hit.route };
}
