// InboundServer (the model) → io.linkerd.proxy.inbound.Server, as Linkerd's policy controller
// encodes it: labels {group, kind, name} on the server and each authorization (older proxies read
// those), metadata on authorizations and routes; an authorization without networks gets the cluster's.
import type { inbound } from '@minimesh/proto';
import { POLICY_GROUP } from '../resources/kinds.js';
import type { ClientAuthorization, InboundHttpRoute, InboundRateLimit, InboundServer } from '../model.js';
import {
  defaultMeta,
  resourceMeta,
  routeMeta,
  toDuration,
  toFilterKind,
  toHostMatch,
  toHttpMatch,
  toIpNetwork,
} from './translate-common.js';

export function toProtoServer(server: InboundServer, clusterNetworks: readonly string[]): inbound.Server {
  const routes = () => server.httpRoutes.map((r) => toProtoHttpRoute(r, clusterNetworks));
  // HTTP/1, HTTP/2 and detected HTTP carry it (the proxy API's gRPC protocol has no rate limit).
  const limit = server.rateLimit ? toProtoRateLimit(server.rateLimit) : undefined;
  let protocol: inbound.ProxyProtocol;
  switch (server.protocol.kind) {
    case 'detect':
      protocol = {
        kind: {
          $case: 'detect',
          value: {
            timeout: toDuration(server.protocol.timeoutMs),
            httpRoutes: routes(),
            ...(limit ? { httpLocalRateLimit: limit } : {}),
          },
        },
      };
      break;
    case 'http1':
      protocol = { kind: { $case: 'http1', value: { routes: routes(), ...(limit ? { localRateLimit: limit } : {}) } } };
      break;
    case 'http2':
      protocol = { kind: { $case: 'http2', value: { routes: routes(), ...(limit ? { localRateLimit: limit } : {}) } } };
      break;
    case 'grpc':
      protocol = { kind: { $case: 'grpc', value: { routes: [defaultGrpcRoute()] } } };
      break;
    case 'opaque':
      protocol = { kind: { $case: 'opaque', value: {} } };
      break;
    case 'tls':
      protocol = { kind: { $case: 'tls', value: {} } };
      break;
  }
  const labels =
    server.ref.kind === 'default'
      ? { group: '', kind: 'default', name: server.ref.name }
      : { group: POLICY_GROUP, kind: 'server', name: server.ref.name };
  return {
    protocol,
    serverIps: [],
    authorizations: server.authorizations.map((a) => toProtoAuthz(a, clusterNetworks)),
    labels,
  };
}

export function toProtoAuthz(a: ClientAuthorization, clusterNetworks: readonly string[]): inbound.Authz {
  const nets = a.networks.length > 0 ? a.networks : clusterNetworks.map((net) => ({ net, except: [] }));
  let authentication: inbound.Authn;
  const auth = a.authentication;
  if (auth.kind === 'unauthenticated') authentication = { permit: { $case: 'unauthenticated', value: {} } };
  else if (auth.kind === 'tls-unauthenticated')
    authentication = { permit: { $case: 'meshTLS', value: { clients: { $case: 'unauthenticated', value: {} } } } };
  else
    authentication = {
      permit: {
        $case: 'meshTLS',
        value: {
          clients: {
            $case: 'identities',
            value: {
              identities: auth.identities.map((name) => ({ name })),
              suffixes: auth.suffixes.map((parts) => ({ parts })),
            },
          },
        },
      },
    };
  const labels =
    a.ref.kind === 'default'
      ? { group: '', kind: 'default', name: a.ref.name }
      : { group: POLICY_GROUP, kind: 'authorizationpolicy', name: a.ref.name };
  return {
    networks: nets.map((n) => ({ net: toIpNetwork(n.net), except: n.except.map(toIpNetwork) })),
    authentication,
    labels,
    metadata:
      a.ref.kind === 'default'
        ? defaultMeta(a.ref.name)
        : resourceMeta({ group: POLICY_GROUP, kind: 'authorizationpolicy', name: a.ref.name }),
  };
}

function toProtoHttpRoute(r: InboundHttpRoute, clusterNetworks: readonly string[]): inbound.HttpRoute {
  return {
    metadata: routeMeta(r.ref),
    hosts: r.hostnames.map(toHostMatch),
    authorizations: r.authorizations.map((a) => toProtoAuthz(a, clusterNetworks)),
    rules: r.rules.map((rule) => ({
      matches: rule.matches.map(toHttpMatch),
      // Inbound, responses are not edited and only linkerd2-proxy-api's own filters exist.
      filters: rule.filters.flatMap((f): inbound.HttpRoute_Filter[] => {
        if (f.kind !== 'requestHeaderModifier' && f.kind !== 'requestRedirect') return [];
        const k = toFilterKind(f);
        return k.$case === 'responseHeaderModifier' ? [] : [{ kind: k }];
      }),
    })),
  };
}

function defaultGrpcRoute(): inbound.GrpcRoute {
  return {
    metadata: defaultMeta('default'),
    hosts: [],
    authorizations: [],
    rules: [{ matches: [{ rpc: { service: '', method: '' }, headers: [] }], filters: [] }],
  };
}

/** An HTTPLocalRateLimitPolicy as Linkerd's controller sends it (identities by name). */
export function toProtoRateLimit(l: InboundRateLimit): inbound.HttpLocalRateLimit {
  return {
    metadata: resourceMeta({ group: POLICY_GROUP, kind: 'HTTPLocalRateLimitPolicy', name: l.name }),
    ...(l.total !== undefined ? { total: { requestsPerSecond: l.total } } : {}),
    ...(l.identity !== undefined ? { identity: { requestsPerSecond: l.identity } } : {}),
    overrides: l.overrides.map((o) => ({
      limit: { requestsPerSecond: o.requestsPerSecond },
      clients: { identities: o.identities.map((name) => ({ name })) },
    })),
  };
}
