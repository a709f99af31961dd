// Pieces of the policy model in the proxy API's terms, shared by the inbound and outbound translators.
import type { httpRoute, meta, net, tlsRoute } from '@minimesh/proto';
import { httpTypes, toIpAddress, type Duration } from '@minimesh/proto';
import type {
  HeaderMatch,
  HeaderModifier,
  HostMatch,
  HttpFilter,
  HttpRouteMatch,
  RequestRedirect,
  RouteRef,
} from '../model.js';

export function toDuration(ms: number): Duration {
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: Math.round((ms % 1000) * 1e6) };
}

/** "10.0.0.0/8" → IPNetwork. */
export function toIpNetwork(cidr: string): net.IPNetwork {
  const slash = cidr.lastIndexOf('/');
  const addr = slash < 0 ? cidr : cidr.slice(0, slash);
  const prefix = slash < 0 ? (addr.includes(':') ? 128 : 32) : Number(cidr.slice(slash + 1));
  return { ip: toIpAddress(addr), prefixLen: prefix };
}

export function defaultMeta(name: string): meta.Metadata {
  return { kind: { $case: 'default', value: name } };
}

export function resourceMeta(r: Partial<meta.Resource> & { group: string; kind: string; name: string }): meta.Metadata {
  return {
    kind: {
      $case: 'resource',
      value: {
        group: r.group,
        kind: r.kind,
        name: r.name,
        namespace: r.namespace ?? '',
        section: r.section ?? '',
        port: r.port ?? 0,
      },
    },
  };
}

export function routeMeta(ref: RouteRef): meta.Metadata {
  return ref.kind === 'default'
    ? defaultMeta(ref.name)
    : resourceMeta({
        group: ref.group,
        kind: ref.resourceKind,
        name: ref.name,
        ...(ref.namespace ? { namespace: ref.namespace } : {}),
      });
}

export function toHostMatch(h: HostMatch): httpRoute.HostMatch {
  return h.kind === 'exact'
    ? { match: { $case: 'exact', value: h.value } }
    : { match: { $case: 'suffix', value: { reverseLabels: h.reverseLabels } } };
}

/** A TLSRoute hostname as an SNI match: the same exact name or `*.suffix` as an HTTP host match. */
export function toSniMatch(h: HostMatch): tlsRoute.SniMatch {
  return h.kind === 'exact'
    ? { match: { $case: 'exact', value: h.value } }
    : { match: { $case: 'suffix', value: { reverseLabels: h.reverseLabels } } };
}

const REGISTERED: Record<string, httpTypes.HttpMethod_Registered> = {
  GET: httpTypes.HttpMethod_Registered.GET,
  POST: httpTypes.HttpMethod_Registered.POST,
  PUT: httpTypes.HttpMethod_Registered.PUT,
  DELETE: httpTypes.HttpMethod_Registered.DELETE,
  PATCH: httpTypes.HttpMethod_Registered.PATCH,
  OPTIONS: httpTypes.HttpMethod_Registered.OPTIONS,
  CONNECT: httpTypes.HttpMethod_Registered.CONNECT,
  HEAD: httpTypes.HttpMethod_Registered.HEAD,
  TRACE: httpTypes.HttpMethod_Registered.TRACE,
};

export function toHeaderMatch(h: HeaderMatch): httpRoute.HeaderMatch {
  return {
    name: h.name,
    value: h.kind === 'exact' ? { $case: 'exact', value: Buffer.from(h.value) } : { $case: 'regex', value: h.value },
  };
}

export function toHttpMatch(m: HttpRouteMatch): httpRoute.HttpRouteMatch {
  const out: httpRoute.HttpRouteMatch = {
    headers: m.headers.map(toHeaderMatch),
    queryParams: m.queryParams.map((q) => ({
      name: q.name,
      value: q.kind === 'exact' ? { $case: 'exact', value: q.value } : { $case: 'regex', value: q.value },
    })),
  };
  if (m.path) out.path = { kind: { $case: m.path.kind, value: m.path.value } };
  if (m.method) {
    const reg = REGISTERED[m.method];
    out.method = {
      type: reg !== undefined ? { $case: 'registered', value: reg } : { $case: 'unregistered', value: m.method },
    };
  }
  return out;
}

function toHeaders(list: HeaderModifier['add']): httpTypes.Headers {
  return { headers: list.map((h) => ({ name: h.name, value: Buffer.from(h.value) })) };
}

export function toRequestHeaderModifier(m: HeaderModifier): httpRoute.RequestHeaderModifier {
  return { add: toHeaders(m.add), set: toHeaders(m.set), remove: m.remove };
}

export function toRedirect(r: RequestRedirect): httpRoute.RequestRedirect {
  const out: httpRoute.RequestRedirect = { host: r.hostname ?? '', port: r.port ?? 0, status: r.statusCode ?? 0 };
  if (r.scheme)
    out.scheme = {
      type: {
        $case: 'registered',
        value: r.scheme === 'https' ? httpTypes.Scheme_Registered.HTTPS : httpTypes.Scheme_Registered.HTTP,
      },
    };
  if (r.path) out.path = { replace: { $case: r.path.kind, value: r.path.value } };
  return out;
}

/** The filters a proxy API route accepts, in its oneof form; response modifiers only outbound. */
export type ProtoFilterKind =
  | { $case: 'requestHeaderModifier'; value: httpRoute.RequestHeaderModifier }
  | { $case: 'responseHeaderModifier'; value: httpRoute.ResponseHeaderModifier }
  | { $case: 'redirect'; value: httpRoute.RequestRedirect }
  | { $case: 'failureInjector'; value: httpRoute.HttpFailureInjector };

/** The filters linkerd2-proxy-api has (inbound and outbound); the others are outbound extensions. */
export type BaseHttpFilter = Extract<
  HttpFilter,
  { kind: 'requestHeaderModifier' | 'responseHeaderModifier' | 'requestRedirect' }
>;

export function toFilterKind(f: BaseHttpFilter): ProtoFilterKind {
  switch (f.kind) {
    case 'requestHeaderModifier':
      return { $case: 'requestHeaderModifier', value: toRequestHeaderModifier(f.modifier) };
    case 'responseHeaderModifier':
      return { $case: 'responseHeaderModifier', value: toRequestHeaderModifier(f.modifier) };
    case 'requestRedirect':
      return { $case: 'redirect', value: toRedirect(f.redirect) };
  }
}
