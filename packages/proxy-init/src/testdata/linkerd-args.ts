// Linkerd's proxy-init arguments (LINKERD_PROXY_INIT_ARGS of @minimesh/test-support/linkerd, as the
// Linkerd tutorial's meshed pods show them) as parsed options, for the unit tests of the plan.
import { parsePortRanges } from '@minimesh/config';
import type { ProxyInitOptions } from '../plan.js';

export const LINKERD_OPTIONS: ProxyInitOptions = {
  incomingProxyPort: 4143,
  outgoingProxyPort: 4140,
  proxyUid: 2102,
  proxyGid: undefined,
  inboundPortsToIgnore: parsePortRanges('in', '4190,4191,4567,4568'),
  outboundPortsToIgnore: parsePortRanges('out', '443,6443'),
  portsToRedirect: [],
  subnetsToIgnore: [],
  ipv6: false,
};
