// The outbound route layer: between discover and balance, the request's route in the target's
// OutboundPolicy (HTTPRoutes on the Service port) decides its request timeout, injected failures and
// retries, as linkerd2-proxy applies them. A target without a policy (yet) goes as it would without
// one; a route without a retry policy costs nothing more than its lookup. Weighted backends are not
// applied here (docs/policy.md).
import { requestView, routeOutbound } from '@minimesh/policy/client';
import { H1Exchange, type HttpExchange } from '../http/exchange.js';
import type { Addr } from '../targets.js';
import { respondWith } from './inbound-layer.js';
import type { OutboundPolicies, OutboundTarget } from './outbound-policies.js';
import type { RetryPolicy } from '../http/retry.js';
import { canBuffer, routeRetryPolicy } from './retry-policy.js';

/** The policy target of a request: the Service name when the authority is one, else the original destination. */
export function outboundTarget(
  authority: string,
  orig: Addr | undefined,
  clusterDomain: string,
): OutboundTarget | undefined {
  const colon = authority.lastIndexOf(':');
  const host = colon > 0 ? authority.slice(0, colon) : authority;
  if (host.endsWith(`.svc.${clusterDomain}`) && colon > 0) return { kind: 'authority', authority };
  return orig ? { kind: 'addr', ip: orig.ip, port: orig.port } : undefined;
}

/**
 * Applies the route of `ex` in the target's policy: sets the exchange's request timeout. False: the
 * route injects a failure and the exchange was answered with it. A RetryPolicy: the route retries and
 * the request can be buffered (the retry transport, http/retry.ts, sends it); true: forward it as it is.
 */
export function applyOutboundRoute(
  policies: OutboundPolicies,
  ex: HttpExchange,
  authority: string,
  orig: Addr | undefined,
  clusterDomain: string,
): boolean | RetryPolicy {
  if (!policies.enabled) return true;
  const target = outboundTarget(authority, orig, clusterDomain);
  if (!target) return true;
  const policy = policies.get(target);
  if (!policy) return true;
  const h1 = ex instanceof H1Exchange;
  const headers = ex.headers;
  const method = h1 ? (ex.req.method ?? 'GET') : String(headers[':method'] ?? 'GET');
  const path = h1 ? (ex.req.url ?? '/') : String(headers[':path'] ?? '/');
  const hit = routeOutbound(
    policy,
    ex.protocol,
    requestView(method, path, ex.authority, (n) => {
      const x = headers[n];
      return Array.isArray(x) ? x.join(',') : x;
    }),
  );
  if (!hit) return true;
  const { rule } = hit;
  if (rule.fail) {
    respondWith(ex, rule.fail.status, undefined, rule.fail.message);
    return false;
  }
  const ms = rule.timeouts.requestMs ?? rule.timeouts.responseMs;
  if (ms !== undefined && ms > 0) ex.requestTimeoutMs = ms;
  const retry = rule.retry;
  if (retry === undefined || retry.maxRetries <= 0) return true;
  // A body declared larger than the buffer is never retried: it goes as it is (linkerd2-proxy's ReplayBody).
  const length = headers['content-length'];
  if (!canBuffer(retry, Array.isArray(length) ? length[0] : length)) return true;
  return routeRetryPolicy(retry, policies.retryMetrics.counters(policy, hit.route));
}
