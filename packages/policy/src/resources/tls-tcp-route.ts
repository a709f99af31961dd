// TLSRoute and TCPRoute (gateway.networking.k8s.io v1, the standard channel of the Gateway API v1.6.3;
// the experimental channel's v1alpha2 has the same fields this reads): routes for traffic minimesh does
// not terminate. A TLSRoute selects by the ClientHello's SNI (`hostnames`: exact names or `*.suffix`), a
// TCPRoute selects nothing; each has exactly one rule with weighted backendRefs and no filters, as
// Linkerd's policy controller requires ("TLSRoute needs to have one rule", "TCPRoute needs to have one
// rule": policy-controller/k8s/index/src/outbound/index/{tls,tcp}.rs, linkerd2 edge-26.8.3). Which
// parents they attach to and what the proxy is told is the index's business (route-attachment.ts).
import { arr, FieldError, obj, objectMeta, optStr } from './fields.js';
import { GATEWAY_GROUP } from './kinds.js';
import {
  optional,
  parseBackendRef,
  parseHostnames,
  parseParentRefs,
  parseRouteStatus,
  type BackendRefSpec,
  type RouteCommon,
} from './route-parts.js';

/** The one rule of a TLSRoute or TCPRoute: backends only (`filters` stay empty: these kinds have none). */
export interface L4RouteRuleSpec {
  name?: string;
  filters: never[];
  backendRefs: Array<BackendRefSpec & { filters: never[] }>;
}

export interface TlsRouteSpec extends RouteCommon {
  rules: [L4RouteRuleSpec];
}

/** A TCPRoute: `hostnames` is always empty (the kind has none). */
export interface TcpRouteSpec extends RouteCommon {
  rules: [L4RouteRuleSpec];
}

function parseRules(spec: Record<string, unknown>, kind: string, namespace: string): [L4RouteRuleSpec] {
  const rules = arr(spec.rules, 'spec.rules');
  if (rules.length !== 1) throw new FieldError('spec.rules', `exactly one rule (a ${kind} needs one rule)`, spec.rules);
  const path = 'spec.rules[0]';
  const r = obj(rules[0], path);
  const backendRefs = arr(r.backendRefs, `${path}.backendRefs`).map((b, i) => ({
    ...parseBackendRef(b, `${path}.backendRefs[${i}]`, namespace),
    filters: [] as never[],
  }));
  return [{ ...optional('name', optStr(r.name, `${path}.name`)), filters: [], backendRefs }];
}

export function parseTlsRoute(o: unknown): TlsRouteSpec {
  const meta = objectMeta(o, 'TLSRoute');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  return {
    group: GATEWAY_GROUP,
    meta,
    parents: parseParentRefs(spec, meta, GATEWAY_GROUP),
    // The v1 CRD requires at least one; none (an older CRD) matches every SNI, as in Linkerd (its
    // SNI list is sent empty, and an empty list matches every name).
    hostnames: parseHostnames(spec),
    rules: parseRules(spec, 'TLSRoute', meta.namespace),
    status: parseRouteStatus(o),
  };
}

export function parseTcpRoute(o: unknown): TcpRouteSpec {
  const meta = objectMeta(o, 'TCPRoute');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  return {
    group: GATEWAY_GROUP,
    meta,
    parents: parseParentRefs(spec, meta, GATEWAY_GROUP),
    hostnames: [],
    rules: parseRules(spec, 'TCPRoute', meta.namespace),
    status: parseRouteStatus(o),
  };
}
