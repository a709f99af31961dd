// Inbound route: the filters of the route an Authorized request matched (policy/inbound-authz.ts
// applyRequestFilters): header edits are made to the request, a redirect or an injected failure answers
// it (respond.ts). An HTTP/1 Upgrade takes no filters.
import type { IncomingRequest } from '../http/handoff.js';
import type { Layer, RequestHandler } from '../layers.js';
import { applyRequestFilters, verdictError } from '../policy/inbound-authz.js';
import type { Authorized } from '../targets.js';

export function pushRoute(): Layer<
  RequestHandler<Authorized, IncomingRequest>,
  RequestHandler<Authorized, IncomingRequest>
> {
  return (next) => (target, req) => {
    if (req.upgrade || target.filters.length === 0) return next(target, req);
    const answer = applyRequestFilters(target.filters, {
      authority: req.authority,
      path: req.path,
      headers: req.headers,
    });
    if (answer === undefined || answer.kind !== 'respond') return next(target, req);
    if (answer.status === 403 || answer.status === 404 || (answer.status === 500 && !answer.location))
      return req.fail(verdictError(answer));
    req.answer(answer.status, answer.message, answer.location);
  };
}
