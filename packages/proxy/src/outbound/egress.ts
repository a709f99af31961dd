// Outbound egress (HTTP): Logical → Logical. A request whose original destination lies outside the
// cluster networks is egress: an EgressNetwork may classify it, and its policy (the EgressNetwork's
// routes and its Allow/Deny default, docs/policy.md) must be in force before the request goes on. So,
// as linkerd2-proxy discovers a target's policy before it routes anything to it, the first request to
// such an address waits for the policy controller's first answer (at most `waitMs`); the route stage
// then applies it (a rule that forwards, or 403 "traffic not allowed"). Once answered, requests go on
// at once. Without a controller, for an address it does not classify, or when it has not answered in
// time, the request goes on as it always did (forwarded to the original destination).
import type { IncomingRequest } from '../http/handoff.js';
import type { Layer, RequestHandler } from '../layers.js';
import type { OutboundPolicies } from '../policy/outbound-policies.js';
import type { Logical } from '../targets.js';

export interface EgressOptions {
  policies: Pick<OutboundPolicies, 'isEgress' | 'whenAnswered'> | undefined;
  /** How long a first request waits for the controller's answer. */
  waitMs: number;
}

export function pushEgress(
  opts: EgressOptions,
): Layer<RequestHandler<Logical, IncomingRequest>, RequestHandler<Logical, IncomingRequest>> {
  const { policies, waitMs } = opts;
  return (next) => {
    if (policies === undefined) return next;
    return (logical, req) => {
      const t = logical.policy;
      if (t?.kind !== 'addr' || !policies.isEgress(t.ip)) return next(logical, req);
      const answer = policies.whenAnswered(t, waitMs);
      if (!(answer instanceof Promise)) return next(logical, req);
      answer.then(
        () => next(logical, req),
        (err: unknown) => req.reject(err),
      );
    };
  };
}
