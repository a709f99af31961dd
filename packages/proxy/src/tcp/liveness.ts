// The proxy's own TCP connections, the ones it accepts and the ones it dials to other proxies and
// upstreams, with the socket options that find a dead peer. A peer whose node died without a FIN or RST
// leaves a half-open connection, and an HTTP/2 pool would keep sending on it. Two kernel mechanisms, with
// the values Linkerd's chart gives its proxy (charts/partials/templates/_proxy.tpl, August 2026):
// - TCP keepalive: probes after 10 s idle (LINKERD2_PROXY_INBOUND_ACCEPT_KEEPALIVE and
//   _OUTBOUND_CONNECT_KEEPALIVE, both 10000ms), for a connection with nothing in flight; libuv then probes
//   every second, 10 times (TCP_KEEPINTVL 1, TCP_KEEPCNT 10);
// - TCP_USER_TIMEOUT: sent data unacknowledged for 30 s ends the connection (_INBOUND_ACCEPT_USER_TIMEOUT and
//   _OUTBOUND_CONNECT_USER_TIMEOUT, both 30s), for a connection with something in flight, which keepalive
//   does not probe and the kernel would otherwise retransmit on for about 15 minutes.
// Both also get TCP_NODELAY: the proxy coalesces its writes itself, and Nagle would only hold the last back.
import { connect as netConnect, type Socket } from 'node:net';
import { setTcpUserTimeout } from '../native/index.js';

const TCP_KEEPALIVE_MS = 10_000;
const TCP_USER_TIMEOUT_MS = 30_000;

/** A connection the proxy dials: the options above, the user timeout once it is connected. */
export function dialTcp(host: string, port: number): Socket {
  const s = netConnect({ host, port, noDelay: true, keepAlive: true, keepAliveInitialDelay: TCP_KEEPALIVE_MS });
  s.once('connect', () => setTcpUserTimeout(s, TCP_USER_TIMEOUT_MS));
  return s;
}

/**
 * A connection the proxy accepted, whichever listener took it (the outbound stack also takes the
 * connections of its extra addresses, [::1] beside 127.0.0.1): the options above, set here once.
 */
export function tuneAccepted(socket: Socket): void {
  socket.setNoDelay(true);
  socket.setKeepAlive(true, TCP_KEEPALIVE_MS);
  setTcpUserTimeout(socket, TCP_USER_TIMEOUT_MS);
}
