// TCP keepalive on the proxy's own connections: the ones it accepts and the ones it dials to other
// proxies and upstreams. A peer whose node died without a FIN or RST leaves a half-open connection; an
// HTTP/2 pool would keep sending on it. Probes start after 10 s idle, as Linkerd's chart configures its
// proxy (LINKERD2_PROXY_INBOUND_ACCEPT_KEEPALIVE and _OUTBOUND_CONNECT_KEEPALIVE, both 10000ms).
export const TCP_KEEPALIVE_MS = 10_000;

/** For `net.createServer` and `net.connect` options. */
export const TCP_KEEPALIVE = { keepAlive: true, keepAliveInitialDelay: TCP_KEEPALIVE_MS } as const;
