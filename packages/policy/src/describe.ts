// One-line descriptions of the policy model, for people: `minimesh authz`, `minimesh explain`, logs
// and the index's fixture tests all use these.
import type {
  ClientAuthentication,
  ClientAuthorization,
  HttpRouteMatch,
  InboundHttpRoute,
  InboundProtocol,
  InboundServer,
  OutboundHttpRoute,
  OutboundPolicy,
  RouteRef,
  RouteTimeouts,
  RouteRetry,
} from './model.js';

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

export function describeRouteRef(r: RouteRef): string {
  return r.kind === 'default'
    ? `default route ${r.name}`
    : `${r.resourceKind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
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

export function describeOutboundRoute(policy: OutboundPolicy, r: OutboundHttpRoute): string[] {
  return r.rules.map((rule, i) => {
    const backends = rule.backends.length
      ? rule.backends
          .map((b) =>
            b.kind === 'service'
              ? `${b.authority}${b.exists ? '' : ' (missing)'} w${b.weight}`
              : `invalid: ${b.message}`,
          )
          .join(', ')
      : policy.service.authority;
    const timeouts = Object.keys(rule.timeouts).length ? rule.timeouts : policy.timeouts;
    const retry = rule.retry ?? policy.retry;
    const extras = [describeTimeouts(timeouts), retry ? describeRetry(retry) : ''].filter(Boolean).join('; ');
    return `${describeRouteRef(r.ref)} rule ${i + 1}: ${rule.matches.map(describeMatch).join(' | ') || '(any request)'} -> ${backends}${extras ? `; ${extras}` : ''}`;
  });
}

export function formatMs(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
