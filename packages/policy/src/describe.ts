// One-line descriptions of the policy model, for people: `minimesh authz`, `minimesh explain`, logs
// and the index's fixture tests all use these.
import type {
  ClientAuthentication,
  ClientAuthorization,
  GrpcRouteMatch,
  GrpcRouteRetry,
  HeaderModifier,
  HttpFilter,
  HttpRouteMatch,
  OutboundGrpcRoute,
  RouteBackend,
  InboundHttpRoute,
  InboundProtocol,
  InboundRateLimit,
  InboundServer,
  OutboundHttpRoute,
  OutboundPolicy,
  OutboundTcpRoute,
  OutboundTlsRoute,
  RouteRef,
  RouteTimeouts,
  RouteRetry,
} from './model.js';
import { GATEWAY_GROUP } from './resources/kinds.js';

export function describeServerRef(s: InboundServer): string {
  return s.ref.kind === 'default' ? `default policy ${s.ref.name}` : `Server ${s.ref.name}`;
}

export function describeProtocol(p: InboundProtocol): string {
  switch (p.kind) {
    case 'detect':
      return `detect (timeout ${formatMs(p.timeoutMs)})`;
    case 'http1':
      return 'HTTP/1';
    case 'http2':
      return 'HTTP/2';
    case 'grpc':
      return 'gRPC';
    case 'opaque':
      return 'opaque';
    case 'tls':
      return 'TLS';
  }
}

export function describeAuthentication(a: ClientAuthentication): string {
  if (a.kind === 'unauthenticated') return 'any client';
  if (a.kind === 'tls-unauthenticated') return 'mesh TLS';
  const names = [...a.identities, ...a.suffixes.map((parts) => (parts.length === 0 ? '*' : `*.${parts.join('.')}`))];
  return names.length === 1 && names[0] === '*' ? 'mesh TLS, any identity' : `mesh TLS as ${names.join(' or ')}`;
}

export function describeAuthorizationRef(a: ClientAuthorization): string {
  return `${a.ref.kind === 'default' ? 'default' : 'AuthorizationPolicy'} ${a.ref.name}`;
}

/** "AuthorizationPolicy web-client: mesh TLS as client.shop... from 0.0.0.0/0,::/0" */
export function describeAuthorization(a: ClientAuthorization): string {
  const nets = a.networks.map((n) => (n.except.length ? `${n.net} except ${n.except.join(',')}` : n.net)).join(',');
  return `${describeAuthorizationRef(a)}: ${describeAuthentication(a.authentication)} from ${nets}`;
}

/** "HTTPRoute shop/web" (policy.minimesh.io), "HTTPRoute.gateway.networking.k8s.io shop/web", "GRPCRoute shop/rpc". */
export function describeRouteRef(r: RouteRef): string {
  if (r.kind === 'default') return `default route ${r.name}`;
  // The one kind both groups have is told apart as kubectl does (kind.group).
  const kind =
    r.resourceKind === 'HTTPRoute' && r.group === GATEWAY_GROUP ? `HTTPRoute.${GATEWAY_GROUP}` : r.resourceKind;
  return `${kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
}

export function describeMatch(m: HttpRouteMatch): string {
  const parts: string[] = [];
  if (m.method) parts.push(m.method);
  if (m.path)
    parts.push(
      m.path.kind === 'exact' ? m.path.value : m.path.kind === 'prefix' ? `${m.path.value}*` : `~${m.path.value}`,
    );
  for (const h of m.headers) parts.push(`${h.name}${h.kind === 'exact' ? '=' : '~'}${h.value}`);
  for (const q of m.queryParams) parts.push(`?${q.name}${q.kind === 'exact' ? '=' : '~'}${q.value}`);
  return parts.length ? parts.join(' ') : '(any request)';
}

/**
 * "TLSRoute shop/partner: sni api.partner.example,*.cdn.example -> original-dst", "TCPRoute shop/db ->
 * db.shop.svc.cluster.local:5432 w1": a TLSRoute's or TCPRoute's one rule (`parent`: where a rule
 * without backendRefs sends).
 */
export function describeOutboundL4Route(r: OutboundTlsRoute | OutboundTcpRoute, parent: string): string {
  const snis =
    'hostnames' in r
      ? ` sni ${r.hostnames.map((h) => (h.kind === 'exact' ? h.value : `*.${[...h.reverseLabels].reverse().join('.')}`)).join(',') || '(any)'}`
      : '';
  const to = r.backends.length ? r.backends.map((b) => describeBackend(b)).join(', ') : parent;
  return `${describeRouteRef(r.ref)}${snis ? `:${snis}` : ''} -> ${to}`;
}

/** "HTTPRoute api: GET /api* | /healthz" (the matches of every rule, "|" between them). */
export function describeInboundRoute(r: InboundHttpRoute): string {
  const matches = r.rules.flatMap((rule) =>
    rule.matches.length ? rule.matches.map(describeMatch) : ['(any request)'],
  );
  const hosts = r.hostnames.length
    ? ` hosts ${r.hostnames.map((h) => (h.kind === 'exact' ? h.value : `*.${[...h.reverseLabels].reverse().join('.')}`)).join(',')}`
    : '';
  return `${describeRouteRef(r.ref)}:${hosts} ${matches.join(' | ')}`;
}

export function describeTimeouts(t: RouteTimeouts): string {
  const parts: string[] = [];
  if (t.requestMs !== undefined) parts.push(`request ${formatMs(t.requestMs)}`);
  if (t.responseMs !== undefined) parts.push(`response ${formatMs(t.responseMs)}`);
  if (t.idleMs !== undefined) parts.push(`idle ${formatMs(t.idleMs)}`);
  return parts.join(', ');
}

export function describeRetry(r: RouteRetry): string {
  const on = r.statusRanges?.map((s) => (s.min === s.max ? `${s.min}` : `${s.min}-${s.max}`)).join(',');
  return `retry up to ${r.limit}x${on ? ` on ${on}` : ''}${r.timeoutMs !== undefined ? `, ${formatMs(r.timeoutMs)} per try` : ''}`;
}

function describeModifier(m: HeaderModifier): string {
  return [
    ...m.set.map((h) => `set ${h.name}=${h.value}`),
    ...m.add.map((h) => `add ${h.name}=${h.value}`),
    ...m.remove.map((n) => `remove ${n}`),
  ].join(', ');
}

/** "request headers set x-a=1", "redirect 301 https://example.com:8443/prefix*", "mirror 10/100 to …". */
export function describeFilter(f: HttpFilter): string {
  switch (f.kind) {
    case 'requestHeaderModifier':
      return `request headers ${describeModifier(f.modifier)}`;
    case 'responseHeaderModifier':
      return `response headers ${describeModifier(f.modifier)}`;
    case 'requestRedirect': {
      const r = f.redirect;
      const parts = [`redirect ${r.statusCode ?? 302}`];
      if (r.scheme) parts.push(`scheme ${r.scheme}`);
      if (r.hostname) parts.push(`host ${r.hostname}`);
      if (r.port) parts.push(`port ${r.port}`);
      if (r.path) parts.push(`path ${r.path.kind === 'full' ? r.path.value : `prefix ${r.path.value}`}`);
      return parts.join(' ');
    }
    case 'urlRewrite': {
      const parts = ['rewrite'];
      if (f.rewrite.hostname) parts.push(`host ${f.rewrite.hostname}`);
      if (f.rewrite.path)
        parts.push(`path ${f.rewrite.path.kind === 'full' ? f.rewrite.path.value : `prefix ${f.rewrite.path.value}`}`);
      return parts.join(' ');
    }
    case 'requestMirror': {
      const share = f.mirror.fraction ? ` ${f.mirror.fraction.numerator}/${f.mirror.fraction.denominator}` : '';
      return `mirror${share} to ${describeBackend(f.mirror.backend, false)}`;
    }
  }
}

/** "web.shop.svc.cluster.local:80 w90", "gone… (missing) w1", "invalid: <why> w1". */
export function describeBackend(b: RouteBackend, weight = true): string {
  const w = weight ? ` w${b.weight}` : '';
  if (b.kind === 'invalid') return `invalid: ${b.message}${weight && b.weight !== 1 ? w : ''}`;
  if (b.kind === 'egress') {
    const port = b.port !== undefined ? `:${b.port}` : '';
    return `EgressNetwork ${b.namespace}/${b.name}${port}${b.exists ? '' : ' (missing)'}${w}`;
  }
  const filters = b.filters.length ? ` [${b.filters.map(describeFilter).join('; ')}]` : '';
  return `${b.authority}${b.exists ? '' : ' (missing)'}${w}${filters}`;
}

export function describeGrpcRetry(r: GrpcRouteRetry): string {
  const on = r.conditions?.join(',');
  return `retry up to ${r.limit}x${on ? ` on ${on}` : ''}${r.timeoutMs !== undefined ? `, ${formatMs(r.timeoutMs)} per try` : ''}`;
}

function ruleLine(
  head: string,
  matches: string,
  backends: readonly RouteBackend[],
  parent: string,
  filters: readonly HttpFilter[],
  extras: string,
): string {
  const to = backends.length ? backends.map((b) => describeBackend(b)).join(', ') : parent;
  const f = filters.length ? `; ${filters.map(describeFilter).join('; ')}` : '';
  return `${head}: ${matches} -> ${to}${f}${extras ? `; ${extras}` : ''}`;
}

export function describeOutboundRoute(policy: OutboundPolicy, r: OutboundHttpRoute): string[] {
  return r.rules.map((rule, i) => {
    const timeouts = Object.keys(rule.timeouts).length ? rule.timeouts : policy.timeouts;
    const retry = rule.retry ?? policy.retry;
    const extras = [describeTimeouts(timeouts), retry ? describeRetry(retry) : ''].filter(Boolean).join('; ');
    const matches = rule.matches.map(describeMatch).join(' | ') || '(any request)';
    return ruleLine(
      `${describeRouteRef(r.ref)} rule ${i + 1}`,
      matches,
      rule.backends,
      policy.service.authority,
      rule.filters,
      extras,
    );
  });
}

/** "grpc.Echo/Ping x-user=a" (service and method; absent ones are "*"). */
export function describeGrpcMatch(m: GrpcRouteMatch): string {
  const rpc = m.service === undefined && m.method === undefined ? '' : `${m.service ?? '*'}/${m.method ?? '*'}`;
  const parts = [rpc, ...m.headers.map((h) => `${h.name}${h.kind === 'exact' ? '=' : '~'}${h.value}`)].filter(Boolean);
  return parts.length ? parts.join(' ') : '(any request)';
}

export function describeOutboundGrpcRoute(policy: OutboundPolicy, r: OutboundGrpcRoute): string[] {
  return r.rules.map((rule, i) => {
    const timeouts = Object.keys(rule.timeouts).length ? rule.timeouts : policy.timeouts;
    const retry = rule.retry ?? policy.grpcRetry;
    const extras = [describeTimeouts(timeouts), retry ? describeGrpcRetry(retry) : ''].filter(Boolean).join('; ');
    return ruleLine(
      `${describeRouteRef(r.ref)} rule ${i + 1}`,
      rule.matches.map(describeGrpcMatch).join(' | '),
      rule.backends,
      policy.service.authority,
      rule.filters,
      extras,
    );
  });
}

export function formatMs(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** "HTTPLocalRateLimitPolicy web-limit: total 100 rps, 20 rps per identity, 50 rps for batch.shop..." */
export function describeRateLimit(l: InboundRateLimit): string {
  const parts: string[] = [];
  if (l.total !== undefined) parts.push(`total ${l.total} rps`);
  if (l.identity !== undefined) parts.push(`${l.identity} rps per identity`);
  for (const o of l.overrides) parts.push(`${o.requestsPerSecond} rps for ${o.identities.join(', ')}`);
  return `HTTPLocalRateLimitPolicy ${l.name}: ${parts.join('; ')} (over it: 429)`;
}
