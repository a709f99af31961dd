// The seed's arguments, as argv and as parsed options (shared by the unit tests).
import { parsePortRanges } from '@minimesh/config';
import type { ProxyInitOptions } from '../plan.js';

export const SEED_ARGV = [
  '--ipv6=false',
  '--incoming-proxy-port',
  '4143',
  '--outgoing-proxy-port',
  '4140',
  '--proxy-uid',
  '2102',
  '--inbound-ports-to-ignore',
  '4190,4191,4567,4568',
  '--outbound-ports-to-ignore',
  '443,6443',
];

export const SEED: ProxyInitOptions = {
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
