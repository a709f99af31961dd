// Facts about Linkerd that tests compare minimesh against.

/**
 * Linkerd's proxy-init arguments, as `kubectl describe pod` shows them on the linkerd-init container
 * (image proxy-init:v2.4.2) of a meshed pod in the Linkerd tutorial that minimesh follows, with the
 * API server's ports (443,6443) as outbound ports to ignore, as its rule listing shows. minimesh's
 * injector writes the same by default, and proxy-init takes them as they are.
 */
export const LINKERD_PROXY_INIT_ARGS: readonly string[] = [
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

/**
 * The nat rules those arguments make, chain by chain in iptables-save form: the rules the Linkerd
 * tutorial lists with `iptables-legacy -t nat -L <chain> -n -v` in a meshed pod (same targets, ports
 * and proxy-init/<what> comments). minimesh-proxy-init writes exactly these.
 */
export const LINKERD_NAT_CHAINS: Readonly<Record<string, readonly string[]>> = {
  PREROUTING: ['-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT'],
  PROXY_INIT_REDIRECT: [
    '-A PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4190,4191,4567,4568 -m comment --comment "proxy-init/ignore-port-4190,4191,4567,4568" -j RETURN',
    '-A PROXY_INIT_REDIRECT -p tcp -m comment --comment "proxy-init/redirect-all-incoming-to-proxy-port" -j REDIRECT --to-ports 4143',
  ],
  OUTPUT: ['-A OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT'],
  PROXY_INIT_OUTPUT: [
    '-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102 -m comment --comment "proxy-init/ignore-proxy-user-id" -j RETURN',
    '-A PROXY_INIT_OUTPUT -o lo -m comment --comment "proxy-init/ignore-loopback" -j RETURN',
    '-A PROXY_INIT_OUTPUT -p tcp -m multiport --dports 443,6443 -m comment --comment "proxy-init/ignore-port-443,6443" -j RETURN',
    '-A PROXY_INIT_OUTPUT -p tcp -m comment --comment "proxy-init/redirect-all-outgoing-to-proxy-port" -j REDIRECT --to-ports 4140',
  ],
};
