// Outbound route: Logical → RouteTarget. The request's route in the Logical's OutboundPolicy (its
// HTTPRoutes or GRPCRoutes) decides what linkerd2-proxy's route layer does: an injected failure answers
// it here; the rule's filters (filters.ts) edit it, redirect it, rewrite it, edit its response, and
// mirror it (a copy sent down the rest of the chain to the mirror's backend, mirror.ts); the request
// timeout (the Gateway API's timeouts.request: the whole request, retries included) bounds it, armed
// once it is sent; a retry policy sends it through the retry transport (http/retry.ts), every attempt
// going down the rest of the chain again with its own timeout (timeouts.backendRequest). A target
// without a policy (yet) and an HTTP/1 Upgrade go on as they are; a request no route of the policy
// matches is answered 404 (gRPC: NOT_FOUND).
import { requestView, routeOutbound, type CompiledOutboundRule } from '@minimesh/policy/client';
import type { Logger } from '@minimesh/runtime';
import type { HttpRequest } from '../http/exchange.js';
import type { IncomingRequest } from '../http/handoff.js';
import { sendWithRetries, type RetryPolicy } from '../http/retry.js';
import type { Layer, RequestHandler } from '../layers.js';
import type { OutboundPolicies } from '../policy/outbound-policies.js';
import { canBuffer, routeRetryPolicy } from '../policy/retry-policy.js';
import { grpcStatusOfHttp } from '../respond.js';
import type { Logical, RouteTarget } from '../targets.js';
import type { Discovery } from '../destination/discovery.js';
import { backendsReady } from './backend.js';
import { applyFilters, responseEditor } from './filters.js';
import { MirrorRequest } from './mirror.js';

export interface RouteOptions {
  /** The OutboundPolicies watch; undefined (or without a controller): no routes. */
  policies:
    | (Pick<OutboundPolicies, 'enabled' | 'get' | 'retryMetrics'> & Partial<Pick<OutboundPolicies, 'routeMetrics'>>)
    | undefined;
  log: Logger;
  /** Where backends' endpoints come from (the route waits for them before a request with retries). */
  discovery?: Pick<Discovery, 'httpNow' | 'http'> | undefined;
  /** [0, 1): whether a request is mirrored (a seam for tests). */
  random?: () => number;
}

type MirrorFilter = Extract<CompiledOutboundRule['filters'][number], { kind: 'mirror' }>;

export function pushRoute(
  opts: RouteOptions,
): Layer<RequestHandler<RouteTarget, HttpRequest>, RequestHandler<Logical, IncomingRequest>> {
  const { policies, log } = opts;
  const random = opts.random ?? Math.random;
  // Targets are made once: per Logical without a rule, per rule (of one compiled policy) with one.
  const plain = new WeakMap<Logical, RouteTarget>();
  const ruled = new WeakMap<CompiledOutboundRule, RouteTarget>();
  const retries = new WeakMap<CompiledOutboundRule, RetryPolicy>();
  const noRoute = (logical: Logical): RouteTarget => {
    let t = plain.get(logical);
    if (t === undefined) plain.set(logical, (t = { logical, rule: undefined }));
    return t;
  };
  const withRule = (logical: Logical, rule: CompiledOutboundRule): RouteTarget => {
    let t = ruled.get(rule);
    if (t === undefined || t.logical !== logical) ruled.set(rule, (t = { logical, rule }));
    return t;
  };
  // A mirror's target: a rule of its own whose one backend is the mirror's.
  const mirrors = new WeakMap<MirrorFilter, RouteTarget>();
  const mirrorTarget = (logical: Logical, f: MirrorFilter, grpc: boolean): RouteTarget => {
    let t = mirrors.get(f);
    if (t === undefined || t.logical !== logical) {
      const rule: CompiledOutboundRule = {
        matches: [],
        prefixes: [],
        filters: [],
        grpc,
        timeouts: {},
        backends: [f.backend],
      };
      mirrors.set(f, (t = { logical, rule }));
    }
    return t;
  };
  return (next) => (logical, req) => {
    if (req.upgrade || policies === undefined || !policies.enabled || logical.policy === undefined)
      return next(noRoute(logical), req);
    const policy = policies.get(logical.policy);
    if (policy === undefined) return next(noRoute(logical), req);
    const headers = req.headers;
    const hit = routeOutbound(
      policy,
      req.protocol,
      requestView(req.method, req.path, req.authority, (n) => {
        const x = headers[n];
        return Array.isArray(x) ? x.join(',') : x;
      }),
    );
    if (hit === undefined) {
      // The Service has routes for this protocol and none matches: 404 (gRPC: NOT_FOUND), as the Gateway
      // API's mesh mode asks and linkerd2-proxy answers a request no route matches. (Without routes of
      // its own the controller sends a default route, which every request matches.)
      const [own, other] = req.protocol === 'h2' ? [policy.http2, policy.http1] : [policy.http1, policy.http2];
      const routes = own.length > 0 ? own : other;
      if (routes.length > 0) {
        const message = `no route of ${logical.authority} matches the request`;
        return routes[0]?.rules[0]?.grpc ? req.answer(500, message, undefined, 5) : req.answer(404, message, undefined);
      }
      return next(noRoute(logical), req);
    }
    const { rule } = hit;
    const routeMetrics = policies.routeMetrics;
    if (routeMetrics !== undefined)
      req.routeStats = routeMetrics.start(policy, hit.route, rule.grpc, hostOf(req.authority));
    // An HTTP rule's failure answers a gRPC request as gRPC (the status gRPC reads from that HTTP status).
    if (rule.fail)
      return rule.grpc
        ? req.answer(500, rule.fail.message, undefined, rule.fail.status)
        : req.answer(rule.fail.status, rule.fail.message, undefined, grpcStatusOfHttp(rule.fail.status));
    if (rule.filters.length > 0) {
      const verdict = applyFilters(rule.filters, req, rule.prefixes);
      if (verdict.kind === 'redirect') return req.answer(verdict.status, 'redirected', verdict.location);
      if (verdict.response.length > 0) req.editResponse = responseEditor(verdict.response);
      for (const f of rule.filters) {
        if (f.kind !== 'mirror' || random() >= f.ratio) continue;
        if (req.hasBody) log.debug({ authority: logical.authority }, 'request with a body: not mirrored');
        else next(mirrorTarget(logical, f, rule.grpc), new MirrorRequest(req, log));
      }
    }
    const ms = rule.timeouts.requestMs ?? rule.timeouts.responseMs;
    if (ms !== undefined && ms > 0) req.requestTimeoutMs = ms;
    const target = withRule(logical, rule);
    const retry = rule.retry;
    // A body declared larger than the buffer is never retried: it goes as it is (linkerd2-proxy's ReplayBody).
    const length = headers['content-length'];
    if (retry === undefined || retry.maxRetries <= 0 || !canBuffer(retry, Array.isArray(length) ? length[0] : length))
      return next(target, req);
    let policyOfRule = retries.get(rule);
    if (policyOfRule === undefined)
      retries.set(rule, (policyOfRule = routeRetryPolicy(retry, policies.retryMetrics.counters(policy, hit.route))));
    const send = policyOfRule;
    const go = (): void => sendWithRetries(req, send, (attempt) => next(target, attempt), log);
    const pending = backendsReady(opts.discovery, rule, logical);
    if (pending === undefined) return go();
    void pending.then(go);
  };
}

let lastAuthority: string | undefined;
let lastHost = '';

/**
 * The request's host for the hostname label: without the port, lower-case. A caller sends the same
 * authority request after request, so the last one is remembered (it was 1.6 % of the outbound proxy's
 * busy time in a CPU profile of 2026-11-30, for a split and a lower-casing per request).
 */
function hostOf(authority: string | undefined): string {
  if (authority === undefined) return '';
  if (authority === lastAuthority) return lastHost;
  const colon = authority.startsWith('[') ? authority.indexOf(']') + 1 : authority.indexOf(':');
  lastHost = (colon < 0 ? authority : authority.slice(0, colon)).toLowerCase();
  lastAuthority = authority;
  return lastHost;
}
