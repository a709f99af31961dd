// `minimesh viz authz`: a workload's inbound requests per Server, route and authorization — allowed,
// refused by its policy (UNAUTHORIZED) and by an HTTPLocalRateLimitPolicy (RATE_LIMITED) — as
// `linkerd viz authz`.
import { getAuthz } from '../api.js';
import { renderAuthz } from '../authz.js';
import { workloadTableCommand } from './common.js';

export const authzCommand = workloadTableCommand({
  info: {
    name: 'minimesh viz authz',
    summary: "a workload's inbound requests per Server, route and authorization: allowed, unauthorized, rate limited",
    usage: 'minimesh viz authz <kind>/<name> [-n NS] [-t WINDOW] [-o table|json|yaml]',
  },
  summary: 'inbound requests of a workload per Server and authorization (denied, rate limited)',
  fetch: getAuthz,
  render: renderAuthz,
  data: (rows) => rows,
  none: (what) => `No inbound requests to ${what}`,
});
