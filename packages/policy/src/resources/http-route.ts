// HTTPRoute (policy.minimesh.io, Linkerd's own copy of the Gateway API route). A route attaches to a
// Server (inbound: it narrows and authorizes requests) or to a Service port (outbound: matches,
// backends, timeouts, retries). Timeouts and retries also come from annotations, as Linkerd's
// timeout.linkerd.io/* and retry.linkerd.io/* (here timeout.minimesh.io/* and retry.minimesh.io/*).
import { parseDuration } from '@minimesh/config';
import type {
  HeaderModifier,
  HostMatch,
  HttpFilter,
  HttpRouteMatch,
  RequestRedirect,
  RouteRetry,
  RouteTimeouts,
} from '../model.js';
import { arr, FieldError, obj, objectMeta, optInt, optObj, optStr, str, type ObjectMeta } from './fields.js';
import { POLICY_GROUP, refersTo } from './kinds.js';

export const ANNOTATIONS = {
  retryHttp: 'retry.minimesh.io/http',
  retryLimit: 'retry.minimesh.io/limit',
  retryTimeout: 'retry.minimesh.io/timeout',
  timeoutRequest: 'timeout.minimesh.io/request',
  timeoutResponse: 'timeout.minimesh.io/response',
  timeoutIdle: 'timeout.minimesh.io/idle',
} as const;

export type RouteParent =
  { kind: 'server'; name: string } | { kind: 'service'; namespace: string; name: string; port?: number };

export interface BackendRefSpec {
  group: string;
  kind: string;
  name: string;
  namespace: string;
  port?: number;
  weight: number;
  filters: HttpFilter[];
}

export interface HttpRouteRuleSpec {
  matches: HttpRouteMatch[];
  filters: HttpFilter[];
  backendRefs: BackendRefSpec[];
  /** spec.rules[].timeouts.request; 0 means none (GEP-1742). */
  requestTimeoutMs?: number;
}

export interface HttpRouteSpec {
  meta: ObjectMeta;
  parents: RouteParent[];
  hostnames: HostMatch[];
  rules: HttpRouteRuleSpec[];
  /** From timeout.minimesh.io/* annotations. */
  timeouts: RouteTimeouts;
  /** From retry.minimesh.io/* annotations. */
  retry?: RouteRetry;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'];

export function parseHttpRoute(o: unknown): HttpRouteSpec {
  const meta = objectMeta(o, 'HTTPRoute');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  const parents = arr(spec.parentRefs, 'spec.parentRefs').flatMap((p, i) =>
    parseParent(p, `spec.parentRefs[${i}]`, meta),
  );
  const hostnames = arr(spec.hostnames, 'spec.hostnames').map((h, i) => parseHostMatch(str(h, `spec.hostnames[${i}]`)));
  const rawRules = spec.rules === undefined ? [{}] : arr(spec.rules, 'spec.rules');
  const rules = rawRules.map((r, i) => parseRule(r, `spec.rules[${i}]`, meta.namespace));
  return {
    meta,
    parents,
    hostnames,
    rules,
    timeouts: parseTimeoutAnnotations(meta.annotations),
    ...optional('retry', parseRetryAnnotations(meta.annotations)),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [k in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [k in K]?: V };
}

function parseParent(v: unknown, path: string, meta: ObjectMeta): RouteParent[] {
  const x = obj(v, path);
  const ref = {
    group: optStr(x.group, `${path}.group`) ?? POLICY_GROUP,
    kind: optStr(x.kind, `${path}.kind`) ?? 'Gateway',
  };
  const name = str(x.name, `${path}.name`);
  const namespace = optStr(x.namespace, `${path}.namespace`);
  const port = optInt(x.port, `${path}.port`, 1, 65535);
  if (refersTo(ref, POLICY_GROUP, 'Server')) {
    if (namespace !== undefined && namespace !== meta.namespace)
      throw new FieldError(
        `${path}.namespace`,
        `the route's namespace "${meta.namespace}" (a Server parent is local)`,
        namespace,
      );
    if (port !== undefined) throw new FieldError(`${path}.port`, 'no port on a Server parent', port);
    if (x.sectionName !== undefined)
      throw new FieldError(`${path}.sectionName`, 'no sectionName on a Server parent', x.sectionName);
    return [{ kind: 'server', name }];
  }
  if (refersTo(ref, '', 'Service'))
    return [{ kind: 'service', namespace: namespace ?? meta.namespace, name, ...(port !== undefined ? { port } : {}) }];
  // Other parents (e.g. a Gateway) are not ours: the route simply does not attach through them.
  return [];
}

export function parseHostMatch(h: string): HostMatch {
  if (h.startsWith('*.')) return { kind: 'suffix', reverseLabels: h.slice(2).split('.').reverse() };
  return { kind: 'exact', value: h };
}

function parseRule(v: unknown, path: string, namespace: string): HttpRouteRuleSpec {
  const r = obj(v, path);
  const matches =
    r.matches === undefined
      ? [{ path: { kind: 'prefix' as const, value: '/' }, headers: [], queryParams: [] }]
      : arr(r.matches, `${path}.matches`).map((m, i) => parseMatch(m, `${path}.matches[${i}]`));
  const filters = arr(r.filters, `${path}.filters`).map((f, i) => parseFilter(f, `${path}.filters[${i}]`));
  const backendRefs = arr(r.backendRefs, `${path}.backendRefs`).map((b, i) => {
    const p = `${path}.backendRefs[${i}]`;
    const x = obj(b, p);
    const port = optInt(x.port, `${p}.port`, 1, 65535);
    return {
      group: optStr(x.group, `${p}.group`) ?? '',
      kind: optStr(x.kind, `${p}.kind`) ?? 'Service',
      name: str(x.name, `${p}.name`),
      namespace: optStr(x.namespace, `${p}.namespace`) ?? namespace,
      ...(port !== undefined ? { port } : {}),
      weight: optInt(x.weight, `${p}.weight`, 0, 1_000_000) ?? 1,
      filters: arr(x.filters, `${p}.filters`).map((f, j) => parseFilter(f, `${p}.filters[${j}]`)),
    };
  });
  const t = optObj(r.timeouts, `${path}.timeouts`);
  const request = t ? optStr(t.request, `${path}.timeouts.request`) : undefined;
  const requestTimeoutMs = request !== undefined ? duration(request, `${path}.timeouts.request`) : undefined;
  return { matches, filters, backendRefs, ...optional('requestTimeoutMs', requestTimeoutMs) };
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
  for (const [key, list] of [
    ['headers', out.headers],
    ['queryParams', out.queryParams],
  ] as const) {
    for (const [i, h] of arr(m[key], `${path}.${key}`).entries()) {
      const hp = `${path}.${key}[${i}]`;
      const x = obj(h, hp);
      const type = optStr(x.type, `${hp}.type`) ?? 'Exact';
      if (type !== 'Exact' && type !== 'RegularExpression')
        throw new FieldError(`${hp}.type`, 'Exact or RegularExpression', x.type);
      const value = typeof x.value === 'string' ? x.value : str(x.value, `${hp}.value`);
      list.push({
        name: key === 'headers' ? str(x.name, `${hp}.name`).toLowerCase() : str(x.name, `${hp}.name`),
        kind: type === 'Exact' ? 'exact' : 'regex',
        value: type === 'Exact' ? value : regex(value, `${hp}.value`),
      });
    }
  }
  const method = optStr(m.method, `${path}.method`);
  if (method !== undefined) {
    if (!METHODS.includes(method)) throw new FieldError(`${path}.method`, METHODS.join(', '), method);
    out.method = method;
  }
  return out;
}

function regex(value: string, path: string): string {
  try {
    new RegExp(value);
  } catch {
    throw new FieldError(path, 'a valid regular expression', value);
  }
  return value;
}

function parseFilter(v: unknown, path: string): HttpFilter {
  const f = obj(v, path);
  const type = str(f.type, `${path}.type`);
  if (type === 'RequestHeaderModifier')
    return {
      kind: 'requestHeaderModifier',
      modifier: parseModifier(f.requestHeaderModifier, `${path}.requestHeaderModifier`),
    };
  if (type === 'ResponseHeaderModifier')
    return {
      kind: 'responseHeaderModifier',
      modifier: parseModifier(f.responseHeaderModifier, `${path}.responseHeaderModifier`),
    };
  if (type === 'RequestRedirect') {
    const r = obj(f.requestRedirect, `${path}.requestRedirect`);
    const redirect: RequestRedirect = {};
    const scheme = optStr(r.scheme, `${path}.requestRedirect.scheme`);
    if (scheme !== undefined) {
      if (scheme !== 'http' && scheme !== 'https')
        throw new FieldError(`${path}.requestRedirect.scheme`, 'http or https', scheme);
      redirect.scheme = scheme;
    }
    const hostname = optStr(r.hostname, `${path}.requestRedirect.hostname`);
    if (hostname !== undefined) redirect.hostname = hostname;
    const rp = optObj(r.path, `${path}.requestRedirect.path`);
    if (rp) {
      const t = str(rp.type, `${path}.requestRedirect.path.type`);
      if (t === 'ReplaceFullPath')
        redirect.path = {
          kind: 'full',
          value: str(rp.replaceFullPath, `${path}.requestRedirect.path.replaceFullPath`),
        };
      else if (t === 'ReplacePrefixMatch')
        redirect.path = {
          kind: 'prefix',
          value: typeof rp.replacePrefixMatch === 'string' ? rp.replacePrefixMatch : '',
        };
      else throw new FieldError(`${path}.requestRedirect.path.type`, 'ReplaceFullPath or ReplacePrefixMatch', rp.type);
    }
    const port = optInt(r.port, `${path}.requestRedirect.port`, 1, 65535);
    if (port !== undefined) redirect.port = port;
    const status = optInt(r.statusCode, `${path}.requestRedirect.statusCode`, 300, 399);
    if (status !== undefined) {
      if (status !== 301 && status !== 302)
        throw new FieldError(`${path}.requestRedirect.statusCode`, '301 or 302', status);
      redirect.statusCode = status;
    }
    return { kind: 'requestRedirect', redirect };
  }
  throw new FieldError(`${path}.type`, 'RequestHeaderModifier, ResponseHeaderModifier or RequestRedirect', type);
}

function parseModifier(v: unknown, path: string): HeaderModifier {
  const m = obj(v, path);
  const pairs = (key: 'add' | 'set') =>
    arr(m[key], `${path}.${key}`).map((h, i) => {
      const x = obj(h, `${path}.${key}[${i}]`);
      return { name: str(x.name, `${path}.${key}[${i}].name`), value: typeof x.value === 'string' ? x.value : '' };
    });
  return {
    add: pairs('add'),
    set: pairs('set'),
    remove: arr(m.remove, `${path}.remove`).map((r, i) => str(r, `${path}.remove[${i}]`)),
  };
}

function duration(value: string, path: string): number {
  try {
    return parseDuration(path, value);
  } catch {
    throw new FieldError(path, 'a duration such as 10s, 500ms or 1h30m', value);
  }
}

/** timeout.minimesh.io/{request,response,idle}; "0s" means none. */
export function parseTimeoutAnnotations(annotations: Readonly<Record<string, string>>): RouteTimeouts {
  const out: RouteTimeouts = {};
  const read = (key: string): number | undefined => {
    const v = annotations[key];
    if (v === undefined) return undefined;
    const ms = duration(v, `metadata.annotations["${key}"]`);
    return ms > 0 ? ms : undefined;
  };
  const request = read(ANNOTATIONS.timeoutRequest);
  const response = read(ANNOTATIONS.timeoutResponse);
  const idle = read(ANNOTATIONS.timeoutIdle);
  if (request !== undefined) out.requestMs = request;
  if (response !== undefined) out.responseMs = response;
  if (idle !== undefined) out.idleMs = idle;
  return out;
}

/**
 * retry.minimesh.io/http ("5xx", "gateway-error", "503", "500-504", comma-separated),
 * retry.minimesh.io/limit (default 1) and retry.minimesh.io/timeout (per attempt).
 */
export function parseRetryAnnotations(annotations: Readonly<Record<string, string>>): RouteRetry | undefined {
  const limitText = annotations[ANNOTATIONS.retryLimit];
  const timeoutText = annotations[ANNOTATIONS.retryTimeout];
  const httpText = annotations[ANNOTATIONS.retryHttp];
  let limit: number | undefined;
  if (limitText !== undefined) {
    limit = Number(limitText);
    if (!/^\d+$/.test(limitText.trim()) || limit > 65535)
      throw new FieldError(`metadata.annotations["${ANNOTATIONS.retryLimit}"]`, 'a whole number of retries', limitText);
    if (limit === 0) limit = undefined;
  }
  let timeoutMs: number | undefined;
  if (timeoutText !== undefined) {
    timeoutMs = duration(timeoutText, `metadata.annotations["${ANNOTATIONS.retryTimeout}"]`);
    if (timeoutMs === 0) timeoutMs = undefined;
  }
  let statusRanges: Array<{ min: number; max: number }> | undefined;
  if (httpText !== undefined) {
    statusRanges = httpText.split(',').map((raw) => {
      const c = raw.trim().toLowerCase();
      if (c === '5xx') return { min: 500, max: 599 };
      if (c === 'gateway-error') return { min: 502, max: 504 };
      const code = (s: string) => (/^\d{3}$/.test(s) && Number(s) >= 100 && Number(s) < 600 ? Number(s) : undefined);
      const one = code(c);
      if (one !== undefined) return { min: one, max: one };
      const [a, b] = c.split('-');
      const lo = a !== undefined ? code(a) : undefined;
      const hi = b !== undefined ? code(b) : undefined;
      if (lo !== undefined && hi !== undefined && lo <= hi) return { min: lo, max: hi };
      throw new FieldError(
        `metadata.annotations["${ANNOTATIONS.retryHttp}"]`,
        'a comma-separated list of 5xx, gateway-error, status codes or ranges such as 500-504',
        httpText,
      );
    });
  }
  if (limit === undefined && timeoutMs === undefined && statusRanges === undefined) return undefined;
  return {
    limit: limit ?? 1,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(statusRanges !== undefined ? { statusRanges } : {}),
  };
}
