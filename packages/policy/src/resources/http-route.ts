// HTTPRoute in two API groups: policy.minimesh.io (Linkerd's own copy of the Gateway API route) and
// gateway.networking.k8s.io v1 (the Gateway API itself, in mesh mode). A route attaches to a Server
// (inbound, policy.minimesh.io only: it narrows and authorizes requests) or to a Service port
// (outbound: matches, filters, weighted backends, timeouts, retries). Timeouts and retries also come
// from annotations, as Linkerd's timeout.linkerd.io/* and retry.linkerd.io/*. What minimesh cannot
// serve (an unknown filter, a CORS or ExternalAuth filter, an ExtensionRef) makes the route invalid,
// with the reason: it is not served and its status says why.
import type { HttpFilter, HttpRouteMatch, RequestRedirect, RouteRetry, RouteTimeouts, UrlRewrite } from '../model.js';
import { arr, FieldError, obj, objectMeta, optInt, optObj, optStr, str } from './fields.js';
import { GATEWAY_GROUP, POLICY_GROUP } from './kinds.js';
import {
  duration,
  optional,
  parseBackendRef,
  parseHeaderModifier,
  parseHostnames,
  parseParentRefs,
  parseRetryAnnotations,
  parseRouteStatus,
  parseTimeoutAnnotations,
  parseValueMatches,
  regex,
  type BackendRefSpec,
  type RouteCommon,
} from './route-parts.js';

export { ANNOTATIONS, parseHostMatch, parseRetryAnnotations, parseTimeoutAnnotations } from './route-parts.js';
export type { BackendRefSpec, RouteParent } from './route-parts.js';

/** A filter as written: a mirror names its backend (the index resolves it). */
export type SpecFilter =
  | Exclude<HttpFilter, { kind: 'requestMirror' }>
  | { kind: 'requestMirror'; ref: BackendRefSpec; fraction?: { numerator: number; denominator: number } };

export interface HttpRouteRuleSpec {
  /** spec.rules[].name (Gateway API v1.4+). */
  name?: string;
  matches: HttpRouteMatch[];
  filters: SpecFilter[];
  backendRefs: Array<BackendRefSpec & { filters: SpecFilter[] }>;
  /** spec.rules[].timeouts.request; 0 means none (GEP-1742). */
  requestTimeoutMs?: number;
  /** spec.rules[].timeouts.backendRequest: each attempt's (GEP-1742); 0 means none. */
  backendRequestTimeoutMs?: number;
}

export interface HttpRouteSpec extends RouteCommon {
  rules: HttpRouteRuleSpec[];
  /** From timeout.minimesh.io/* annotations. */
  timeouts: RouteTimeouts;
  /** From retry.minimesh.io/* annotations. */
  retry?: RouteRetry;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'];

/** Parses an HTTPRoute of either group; throws FieldError naming the field minimesh cannot use. */
export function parseHttpRoute(o: unknown, group: string = POLICY_GROUP): HttpRouteSpec {
  const meta = objectMeta(o, 'HTTPRoute');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  const rawRules = spec.rules === undefined ? [{}] : arr(spec.rules, 'spec.rules');
  const rules = rawRules.map((r, i) => parseRule(r, `spec.rules[${i}]`, meta.namespace, group));
  return {
    group,
    meta,
    parents: parseParentRefs(spec, meta, group),
    hostnames: parseHostnames(spec),
    rules,
    status: parseRouteStatus(o),
    timeouts: parseTimeoutAnnotations(meta.annotations),
    ...optional('retry', parseRetryAnnotations(meta.annotations)),
  };
}

function parseRule(v: unknown, path: string, namespace: string, group: string): HttpRouteRuleSpec {
  const r = obj(v, path);
  const matches =
    r.matches === undefined || (Array.isArray(r.matches) && r.matches.length === 0)
      ? [{ path: { kind: 'prefix' as const, value: '/' }, headers: [], queryParams: [] }]
      : arr(r.matches, `${path}.matches`).map((m, i) => parseMatch(m, `${path}.matches[${i}]`));
  const filters = arr(r.filters, `${path}.filters`).map((f, i) =>
    parseFilter(f, `${path}.filters[${i}]`, namespace, group),
  );
  const backendRefs = arr(r.backendRefs, `${path}.backendRefs`).map((b, i) => {
    const p = `${path}.backendRefs[${i}]`;
    return {
      ...parseBackendRef(b, p, namespace),
      filters: arr(obj(b, p).filters, `${p}.filters`).map((f, j) =>
        parseFilter(f, `${p}.filters[${j}]`, namespace, group),
      ),
    };
  });
  const t = optObj(r.timeouts, `${path}.timeouts`);
  const timeout = (key: 'request' | 'backendRequest'): number | undefined => {
    const text = t ? optStr(t[key], `${path}.timeouts.${key}`) : undefined;
    return text !== undefined ? duration(text, `${path}.timeouts.${key}`) : undefined;
  };
  return {
    ...optional('name', optStr(r.name, `${path}.name`)),
    matches,
    filters,
    backendRefs,
    ...optional('requestTimeoutMs', timeout('request')),
    ...optional('backendRequestTimeoutMs', timeout('backendRequest')),
  };
}

function parseMatch(v: unknown, path: string): HttpRouteMatch {
  const m = obj(v, path);
  const out: HttpRouteMatch = { headers: [], queryParams: [] };
  const p = optObj(m.path, `${path}.path`);
  if (p) {
    const type = optStr(p.type, `${path}.path.type`) ?? 'PathPrefix';
    const value = optStr(p.value, `${path}.path.value`) ?? '/';
    if (type === 'Exact') out.path = { kind: 'exact', value };
    else if (type === 'PathPrefix') out.path = { kind: 'prefix', value };
    else if (type === 'RegularExpression') out.path = { kind: 'regex', value: regex(value, `${path}.path.value`) };
    else throw new FieldError(`${path}.path.type`, 'Exact, PathPrefix or RegularExpression', p.type);
    if (type !== 'RegularExpression' && !value.startsWith('/'))
      throw new FieldError(`${path}.path.value`, 'a path starting with "/"', value);
  }
  out.headers = parseValueMatches(m.headers, `${path}.headers`, { lowerCaseNames: true });
  out.queryParams = parseValueMatches(m.queryParams, `${path}.queryParams`, { lowerCaseNames: false });
  const method = optStr(m.method, `${path}.method`);
  if (method !== undefined) {
    if (!METHODS.includes(method)) throw new FieldError(`${path}.method`, METHODS.join(', '), method);
    out.method = method;
  }
  return out;
}

const POLICY_FILTERS = ['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestRedirect'];
const GATEWAY_FILTERS = [...POLICY_FILTERS, 'URLRewrite', 'RequestMirror'];

function parseFilter(v: unknown, path: string, namespace: string, group: string): SpecFilter {
  const f = obj(v, path);
  const type = str(f.type, `${path}.type`);
  const supported = group === GATEWAY_GROUP ? GATEWAY_FILTERS : POLICY_FILTERS;
  if (!supported.includes(type))
    throw new FieldError(`${path}.type`, `a filter minimesh serves (${supported.join(', ')})`, type);
  switch (type) {
    case 'RequestHeaderModifier':
      return {
        kind: 'requestHeaderModifier',
        modifier: parseHeaderModifier(f.requestHeaderModifier, `${path}.requestHeaderModifier`),
      };
    case 'ResponseHeaderModifier':
      return {
        kind: 'responseHeaderModifier',
        modifier: parseHeaderModifier(f.responseHeaderModifier, `${path}.responseHeaderModifier`),
      };
    case 'RequestRedirect':
      return { kind: 'requestRedirect', redirect: parseRedirect(f.requestRedirect, `${path}.requestRedirect`, group) };
    case 'URLRewrite':
      return { kind: 'urlRewrite', rewrite: parseRewrite(f.urlRewrite, `${path}.urlRewrite`) };
    default:
      return parseMirrorFilter(f.requestMirror, `${path}.requestMirror`, namespace);
  }
}

function parsePathModifier(v: unknown, path: string): { kind: 'full' | 'prefix'; value: string } {
  const rp = obj(v, path);
  const t = str(rp.type, `${path}.type`);
  if (t === 'ReplaceFullPath') return { kind: 'full', value: str(rp.replaceFullPath, `${path}.replaceFullPath`) };
  if (t === 'ReplacePrefixMatch')
    return { kind: 'prefix', value: typeof rp.replacePrefixMatch === 'string' ? rp.replacePrefixMatch : '' };
  throw new FieldError(`${path}.type`, 'ReplaceFullPath or ReplacePrefixMatch', rp.type);
}

function parseRedirect(v: unknown, path: string, group: string): RequestRedirect {
  const r = obj(v, path);
  const redirect: RequestRedirect = {};
  const scheme = optStr(r.scheme, `${path}.scheme`);
  if (scheme !== undefined) {
    if (scheme !== 'http' && scheme !== 'https') throw new FieldError(`${path}.scheme`, 'http or https', scheme);
    redirect.scheme = scheme;
  }
  const hostname = optStr(r.hostname, `${path}.hostname`);
  if (hostname !== undefined) redirect.hostname = hostname;
  if (r.path !== undefined && r.path !== null) redirect.path = parsePathModifier(r.path, `${path}.path`);
  const port = optInt(r.port, `${path}.port`, 1, 65535);
  if (port !== undefined) redirect.port = port;
  const status = optInt(r.statusCode, `${path}.statusCode`, 300, 399);
  if (status !== undefined) {
    // 301 and 302 are core; the Gateway API adds 303, 307 and 308 (extended).
    const codes = group === GATEWAY_GROUP ? [301, 302, 303, 307, 308] : [301, 302];
    if (!codes.includes(status)) throw new FieldError(`${path}.statusCode`, codes.join(', '), status);
    redirect.statusCode = status;
  }
  return redirect;
}

function parseRewrite(v: unknown, path: string): UrlRewrite {
  const r = obj(v, path);
  const rewrite: UrlRewrite = {};
  const hostname = optStr(r.hostname, `${path}.hostname`);
  if (hostname !== undefined) rewrite.hostname = hostname;
  if (r.path !== undefined && r.path !== null) rewrite.path = parsePathModifier(r.path, `${path}.path`);
  return rewrite;
}

/** A RequestMirror filter's body (HTTPRoute and GRPCRoute share it). */
export function parseMirrorFilter(
  v: unknown,
  path: string,
  namespace: string,
): Extract<SpecFilter, { kind: 'requestMirror' }> {
  const m = obj(v, path);
  const { weight: _weight, ...ref } = parseBackendRef(m.backendRef, `${path}.backendRef`, namespace);
  const percent = optInt(m.percent, `${path}.percent`, 0, 100);
  const fr = optObj(m.fraction, `${path}.fraction`);
  if (percent !== undefined && fr) throw new FieldError(`${path}`, 'percent or fraction, not both', 'both');
  let fraction: { numerator: number; denominator: number } | undefined;
  if (percent !== undefined) fraction = { numerator: percent, denominator: 100 };
  if (fr) {
    const numerator = optInt(fr.numerator, `${path}.fraction.numerator`, 0, 2 ** 31 - 1) ?? 0;
    const denominator = optInt(fr.denominator, `${path}.fraction.denominator`, 1, 2 ** 31 - 1) ?? 100;
    if (numerator > denominator)
      throw new FieldError(`${path}.fraction.numerator`, `at most the denominator (${denominator})`, numerator);
    fraction = { numerator, denominator };
  }
  return { kind: 'requestMirror', ref: { ...ref, weight: 1 }, ...optional('fraction', fraction) };
}
