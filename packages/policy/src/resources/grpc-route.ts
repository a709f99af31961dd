// GRPCRoute (gateway.networking.k8s.io v1) with Service parents: matches on the gRPC service and
// method (Exact; linkerd2-proxy-api's GrpcRpcMatch has no regular expressions) and on headers,
// filters (RequestHeaderModifier, ResponseHeaderModifier, RequestMirror), weighted backends.
// Timeouts and retries come from the timeout.minimesh.io/* and retry.minimesh.io/{grpc,limit,timeout}
// annotations, as Linkerd reads its own on a GRPCRoute. What minimesh cannot serve makes the route
// invalid, with the reason.
import type { GrpcRouteMatch, GrpcRouteRetry, RouteTimeouts } from '../model.js';
import { arr, FieldError, obj, objectMeta, optObj, optStr, str } from './fields.js';
import { parseMirrorFilter, type SpecFilter } from './http-route.js';
import { GATEWAY_GROUP } from './kinds.js';
import {
  optional,
  parseBackendRef,
  parseGrpcRetryAnnotations,
  parseHeaderModifier,
  parseHostnames,
  parseParentRefs,
  parseRouteStatus,
  parseTimeoutAnnotations,
  parseValueMatches,
  type BackendRefSpec,
  type RouteCommon,
} from './route-parts.js';

/** A GRPCRoute filter as written (a subset of the HTTP ones). */
export type GrpcSpecFilter = Extract<
  SpecFilter,
  { kind: 'requestHeaderModifier' | 'responseHeaderModifier' | 'requestMirror' }
>;

export interface GrpcRouteRuleSpec {
  name?: string;
  matches: GrpcRouteMatch[];
  filters: GrpcSpecFilter[];
  backendRefs: Array<BackendRefSpec & { filters: GrpcSpecFilter[] }>;
}

export interface GrpcRouteSpec extends RouteCommon {
  rules: GrpcRouteRuleSpec[];
  timeouts: RouteTimeouts;
  retry?: GrpcRouteRetry;
}

const FILTERS = ['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestMirror'];

export function parseGrpcRoute(o: unknown): GrpcRouteSpec {
  const meta = objectMeta(o, 'GRPCRoute');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  const rawRules = spec.rules === undefined ? [{}] : arr(spec.rules, 'spec.rules');
  return {
    group: GATEWAY_GROUP,
    meta,
    parents: parseParentRefs(spec, meta, GATEWAY_GROUP),
    hostnames: parseHostnames(spec),
    rules: rawRules.map((r, i) => parseRule(r, `spec.rules[${i}]`, meta.namespace)),
    status: parseRouteStatus(o),
    timeouts: parseTimeoutAnnotations(meta.annotations),
    ...optional('retry', parseGrpcRetryAnnotations(meta.annotations)),
  };
}

function parseRule(v: unknown, path: string, namespace: string): GrpcRouteRuleSpec {
  const r = obj(v, path);
  const written = arr(r.matches, `${path}.matches`);
  // No matches: every request (the Gateway API's default).
  const matches =
    written.length === 0 ? [{ headers: [] }] : written.map((m, i) => parseMatch(m, `${path}.matches[${i}]`));
  const filters = arr(r.filters, `${path}.filters`).map((f, i) => parseFilter(f, `${path}.filters[${i}]`, namespace));
  const backendRefs = arr(r.backendRefs, `${path}.backendRefs`).map((b, i) => {
    const p = `${path}.backendRefs[${i}]`;
    return {
      ...parseBackendRef(b, p, namespace),
      filters: arr(obj(b, p).filters, `${p}.filters`).map((f, j) => parseFilter(f, `${p}.filters[${j}]`, namespace)),
    };
  });
  return { ...optional('name', optStr(r.name, `${path}.name`)), matches, filters, backendRefs };
}

function parseMatch(v: unknown, path: string): GrpcRouteMatch {
  const m = obj(v, path);
  const out: GrpcRouteMatch = { headers: parseValueMatches(m.headers, `${path}.headers`, { lowerCaseNames: true }) };
  const method = optObj(m.method, `${path}.method`);
  if (method) {
    const type = optStr(method.type, `${path}.method.type`) ?? 'Exact';
    if (type !== 'Exact')
      throw new FieldError(`${path}.method.type`, 'Exact (minimesh serves no RegularExpression method match)', type);
    const service = optStr(method.service, `${path}.method.service`);
    const name = optStr(method.method, `${path}.method.method`);
    if (service === undefined && name === undefined)
      throw new FieldError(`${path}.method`, 'a service, a method or both', method);
    if (service !== undefined) out.service = service;
    if (name !== undefined) out.method = name;
  }
  return out;
}

function parseFilter(v: unknown, path: string, namespace: string): GrpcSpecFilter {
  const f = obj(v, path);
  const type = str(f.type, `${path}.type`);
  if (!FILTERS.includes(type))
    throw new FieldError(`${path}.type`, `a filter minimesh serves (${FILTERS.join(', ')})`, type);
  if (type === 'RequestHeaderModifier')
    return {
      kind: 'requestHeaderModifier',
      modifier: parseHeaderModifier(f.requestHeaderModifier, `${path}.requestHeaderModifier`),
    };
  if (type === 'ResponseHeaderModifier')
    return {
      kind: 'responseHeaderModifier',
      modifier: parseHeaderModifier(f.responseHeaderModifier, `${path}.responseHeaderModifier`),
    };
  return parseMirrorFilter(f.requestMirror, `${path}.requestMirror`, namespace);
}
