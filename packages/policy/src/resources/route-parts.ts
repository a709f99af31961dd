// The parts the three route kinds share (policy.minimesh.io HTTPRoute, gateway.networking.k8s.io
// HTTPRoute and GRPCRoute): parent references, hostnames, header matches and modifiers, backend
// references, the status a route already carries, and the timeout and retry annotations (Linkerd's
// timeout.linkerd.io/* and retry.linkerd.io/*, here timeout.minimesh.io/* and retry.minimesh.io/*).
import { parseDuration } from '@minimesh/config';
import {
  GRPC_RETRY_CONDITIONS,
  type GrpcRetryCondition,
  type GrpcRouteRetry,
  type HeaderMatch,
  type HeaderModifier,
  type HostMatch,
  type RouteRetry,
  type RouteTimeouts,
} from '../model.js';
import { arr, FieldError, isObject, obj, optInt, optStr, str, type Json, type ObjectMeta } from './fields.js';
import { GATEWAY_GROUP, POLICY_GROUP, refersTo } from './kinds.js';

export const ANNOTATIONS = {
  retryHttp: 'retry.minimesh.io/http',
  retryGrpc: 'retry.minimesh.io/grpc',
  retryLimit: 'retry.minimesh.io/limit',
  retryTimeout: 'retry.minimesh.io/timeout',
  timeoutRequest: 'timeout.minimesh.io/request',
  timeoutResponse: 'timeout.minimesh.io/response',
  timeoutIdle: 'timeout.minimesh.io/idle',
} as const;

/** A parentRef as written (status.parents[].parentRef echoes it). */
export interface WrittenParentRef {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  port?: number;
  sectionName?: string;
}

/** A parentRef, resolved to what it names. */
export type RouteParent = (
  | { kind: 'server'; name: string }
  | { kind: 'service'; namespace: string; name: string; port?: number; sectionName?: string }
  /** An EgressNetwork (policy.minimesh.io): the route describes traffic leaving the cluster through it. */
  | { kind: 'egress'; namespace: string; name: string; port?: number; sectionName?: string }
  /** A parent kind minimesh does not serve through (reported in the route's status when it is ours to report). */
  | { kind: 'other'; group: string; resourceKind: string; namespace: string; name: string }
) & { written: WrittenParentRef };

/** A backendRef as written (existence is the index's business). */
export interface BackendRefSpec {
  group: string;
  kind: string;
  name: string;
  namespace: string;
  port?: number;
  weight: number;
}

/** A route's status.parents entry as the API server has it (kept to compare and to keep other controllers' entries). */
export type RouteParentStatusJson = Json;

/** What every route kind keeps besides its rules. */
export interface RouteCommon {
  /** policy.minimesh.io or gateway.networking.k8s.io. */
  group: string;
  meta: ObjectMeta;
  parents: RouteParent[];
  hostnames: HostMatch[];
  /** status.parents as the object carries it. */
  status: RouteParentStatusJson[];
}

export function optional<K extends string, V>(key: K, value: V | undefined): { [k in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [k in K]?: V };
}

/**
 * spec.parentRefs. A parentRef without group and kind names a Gateway (the Gateway API's default);
 * the policy.minimesh.io HTTPRoute's default group is its own (Linkerd's copy defaults to
 * policy.linkerd.io). Server parents are a policy.minimesh.io HTTPRoute's only (inbound routes).
 */
export function parseParentRefs(spec: Json, meta: ObjectMeta, routeGroup: string): RouteParent[] {
  return arr(spec.parentRefs, 'spec.parentRefs').map((p, i) =>
    parseParent(p, `spec.parentRefs[${i}]`, meta, routeGroup),
  );
}

function parseParent(v: unknown, path: string, meta: ObjectMeta, routeGroup: string): RouteParent {
  const x = obj(v, path);
  const kind = optStr(x.kind, `${path}.kind`) ?? 'Gateway';
  // An absent group: the core group for a Service (as Linkerd reads it), else the route's default.
  const group = x.group === '' ? '' : optStr(x.group, `${path}.group`);
  const fallback = kind.toLowerCase() === 'service' ? '' : routeGroup === POLICY_GROUP ? POLICY_GROUP : GATEWAY_GROUP;
  const ref = { group: group ?? fallback, kind };
  const name = str(x.name, `${path}.name`);
  const namespace = optStr(x.namespace, `${path}.namespace`);
  const port = optInt(x.port, `${path}.port`, 1, 65535);
  const sectionName = optStr(x.sectionName, `${path}.sectionName`);
  const written: WrittenParentRef = {
    ...(typeof x.group === 'string' ? { group: x.group } : {}),
    ...(typeof x.kind === 'string' ? { kind: x.kind } : {}),
    ...optional('namespace', namespace),
    name,
    ...optional('port', port),
    ...optional('sectionName', sectionName),
  };
  if (routeGroup === POLICY_GROUP && refersTo(ref, POLICY_GROUP, 'Server')) {
    if (namespace !== undefined && namespace !== meta.namespace)
      throw new FieldError(
        `${path}.namespace`,
        `the route's namespace "${meta.namespace}" (a Server parent is local)`,
        namespace,
      );
    if (port !== undefined) throw new FieldError(`${path}.port`, 'no port on a Server parent', port);
    if (sectionName !== undefined)
      throw new FieldError(`${path}.sectionName`, 'no sectionName on a Server parent', sectionName);
    return { kind: 'server', name, written };
  }
  if (refersTo(ref, POLICY_GROUP, 'EgressNetwork'))
    return {
      kind: 'egress',
      namespace: namespace ?? meta.namespace,
      name,
      ...optional('port', port),
      ...optional('sectionName', sectionName),
      written,
    };
  if (refersTo(ref, '', 'Service'))
    return {
      kind: 'service',
      namespace: namespace ?? meta.namespace,
      name,
      ...optional('port', port),
      ...optional('sectionName', sectionName),
      written,
    };
  return {
    kind: 'other',
    group: ref.group,
    resourceKind: ref.kind,
    namespace: namespace ?? meta.namespace,
    name,
    written,
  };
}

export function parseHostnames(spec: Json): HostMatch[] {
  return arr(spec.hostnames, 'spec.hostnames').map((h, i) => parseHostMatch(str(h, `spec.hostnames[${i}]`)));
}

export function parseHostMatch(h: string): HostMatch {
  if (h.startsWith('*.')) return { kind: 'suffix', reverseLabels: h.slice(2).split('.').reverse() };
  return { kind: 'exact', value: h };
}

/** status.parents, kept as they are (only entries that are objects). */
export function parseRouteStatus(o: unknown): RouteParentStatusJson[] {
  const status = isObject(o) && isObject(o.status) ? o.status : undefined;
  const parents = status && Array.isArray(status.parents) ? status.parents : [];
  return parents.filter(isObject);
}

export function regex(value: string, path: string): string {
  try {
    new RegExp(value);
  } catch {
    throw new FieldError(path, 'a valid regular expression', value);
  }
  return value;
}

/** A header (or query parameter) match list: Exact (the default) or RegularExpression. */
export function parseValueMatches(v: unknown, path: string, opts: { lowerCaseNames: boolean }): HeaderMatch[] {
  return arr(v, path).map((h, i) => {
    const hp = `${path}[${i}]`;
    const x = obj(h, hp);
    const type = optStr(x.type, `${hp}.type`) ?? 'Exact';
    if (type !== 'Exact' && type !== 'RegularExpression')
      throw new FieldError(`${hp}.type`, 'Exact or RegularExpression', x.type);
    const value = typeof x.value === 'string' ? x.value : str(x.value, `${hp}.value`);
    const name = str(x.name, `${hp}.name`);
    return {
      name: opts.lowerCaseNames ? name.toLowerCase() : name,
      kind: type === 'Exact' ? 'exact' : 'regex',
      value: type === 'Exact' ? value : regex(value, `${hp}.value`),
    };
  });
}

export function parseHeaderModifier(v: unknown, path: string): HeaderModifier {
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

/** A backendRef (or a mirror's backendRef, without weight): group and kind default to a core Service. */
export function parseBackendRef(v: unknown, path: string, namespace: string): BackendRefSpec {
  const x = obj(v, path);
  const port = optInt(x.port, `${path}.port`, 1, 65535);
  return {
    group: optStr(x.group, `${path}.group`) ?? '',
    kind: optStr(x.kind, `${path}.kind`) ?? 'Service',
    name: str(x.name, `${path}.name`),
    namespace: optStr(x.namespace, `${path}.namespace`) ?? namespace,
    ...optional('port', port),
    weight: optInt(x.weight, `${path}.weight`, 0, 1_000_000) ?? 1,
  };
}

export function duration(value: string, path: string): number {
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

/** retry.minimesh.io/limit (default 1; 0: none) and retry.minimesh.io/timeout (per attempt; 0s: none). */
function parseRetryCommon(annotations: Readonly<Record<string, string>>): { limit?: number; timeoutMs?: number } {
  const limitText = annotations[ANNOTATIONS.retryLimit];
  const timeoutText = annotations[ANNOTATIONS.retryTimeout];
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
  return { ...optional('limit', limit), ...optional('timeoutMs', timeoutMs) };
}

/**
 * retry.minimesh.io/http ("5xx", "gateway-error", "503", "500-504", comma-separated),
 * retry.minimesh.io/limit (default 1) and retry.minimesh.io/timeout (per attempt).
 */
export function parseRetryAnnotations(annotations: Readonly<Record<string, string>>): RouteRetry | undefined {
  const { limit, timeoutMs } = parseRetryCommon(annotations);
  const httpText = annotations[ANNOTATIONS.retryHttp];
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
  return { limit: limit ?? 1, ...optional('timeoutMs', timeoutMs), ...optional('statusRanges', statusRanges) };
}

/**
 * retry.minimesh.io/grpc (cancelled, deadline-exceeded, internal, resource-exhausted, unavailable,
 * comma-separated, as Linkerd's retry.linkerd.io/grpc) with the shared limit and timeout.
 */
export function parseGrpcRetryAnnotations(annotations: Readonly<Record<string, string>>): GrpcRouteRetry | undefined {
  const { limit, timeoutMs } = parseRetryCommon(annotations);
  const text = annotations[ANNOTATIONS.retryGrpc];
  let conditions: GrpcRetryCondition[] | undefined;
  if (text !== undefined) {
    conditions = text.split(',').map((raw) => {
      const c = raw.trim().toLowerCase();
      if ((GRPC_RETRY_CONDITIONS as readonly string[]).includes(c)) return c as GrpcRetryCondition;
      throw new FieldError(
        `metadata.annotations["${ANNOTATIONS.retryGrpc}"]`,
        `a comma-separated list of ${GRPC_RETRY_CONDITIONS.join(', ')}`,
        text,
      );
    });
  }
  if (limit === undefined && timeoutMs === undefined && conditions === undefined) return undefined;
  return { limit: limit ?? 1, ...optional('timeoutMs', timeoutMs), ...optional('conditions', conditions) };
}
