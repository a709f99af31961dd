// `minimesh viz stat-outbound`: a workload's outbound traffic per Service, route and backend (success
// rate, RPS, latency, timeouts, retries) from the proxies' route metrics, as `linkerd viz stat-outbound`.
import { getStatOutbound } from '../api.js';
import { renderStatOutbound, toStatOutboundJson } from '../stat-outbound.js';
import { workloadTableCommand } from './common.js';

export const statOutboundCommand = workloadTableCommand({
  info: {
    name: 'minimesh viz stat-outbound',
    summary:
      "a workload's outbound traffic per Service, route and backend: success rate, RPS, latency, timeouts, retries",
    usage: 'minimesh viz stat-outbound <kind>/<name> [-n NS] [-t WINDOW] [-o table|json|yaml]',
  },
  summary: 'outbound traffic of a workload per route and backend (canary splits)',
  fetch: getStatOutbound,
  render: renderStatOutbound,
  data: toStatOutboundJson,
  none: (what) => `No outbound route traffic from ${what}`,
});
