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
 * and proxy-init/<what> comments). minimesh-proxy-init writes these and one more (MINIMESH_NAT_CHAINS).
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

/**
 * The one rule minimesh's proxy-init adds to those chains, first in PROXY_INIT_OUTPUT: the proxy's own
 * connections to its pod's IP (a pod that is a backend of the Service it calls) leave through lo and never
 * pass PREROUTING, so it sends them to the inbound chain. Linkerd's proxy-init had the same rule
 * (`redirect-non-loopback-local-traffic`) until v1.4.0 (linkerd2-proxy-init#45, 2021), when Linkerd's
 * inbound proxy began forwarding to the pod's IP, which the rule would loop; minimesh's inbound proxy
 * forwards to 127.0.0.1, which the rule leaves alone.
 */
export const SELF_REDIRECT_RULE =
  '-A PROXY_INIT_OUTPUT ! -d 127.0.0.1/32 -o lo -m owner --uid-owner 2102 -m comment --comment "proxy-init/redirect-non-loopback-local-traffic" -j PROXY_INIT_REDIRECT';

/** minimesh-proxy-init's chains for Linkerd's arguments: Linkerd's, with SELF_REDIRECT_RULE first in PROXY_INIT_OUTPUT. */
export const MINIMESH_NAT_CHAINS: Readonly<Record<string, readonly string[]>> = {
  ...LINKERD_NAT_CHAINS,
  PROXY_INIT_OUTPUT: [SELF_REDIRECT_RULE, ...(LINKERD_NAT_CHAINS.PROXY_INIT_OUTPUT ?? [])],
};
