// Finding a dead peer on the proxy's own connections: the ones it accepts and the ones it dials to other
// proxies and upstreams. A peer whose node died without a FIN or RST leaves a half-open connection, and an
// HTTP/2 pool would keep sending on it. Two kernel mechanisms, with the values Linkerd's chart gives its
// proxy (charts/partials/templates/_proxy.tpl, August 2026):
// - TCP keepalive: probes after 10 s idle (LINKERD2_PROXY_INBOUND_ACCEPT_KEEPALIVE and
//   _OUTBOUND_CONNECT_KEEPALIVE, both 10000ms), for a connection with nothing in flight;
// - TCP_USER_TIMEOUT: sent data unacknowledged for 30 s ends the connection (_INBOUND_ACCEPT_USER_TIMEOUT and
//   _OUTBOUND_CONNECT_USER_TIMEOUT, both 30s), for a connection with something in flight, which keepalive
//   does not probe and the kernel would otherwise retransmit on for about 15 minutes.
import type { Socket } from 'node:net';
import { setTcpUserTimeout } from '../native/index.js';

export const TCP_KEEPALIVE_MS = 10_000;
export const TCP_USER_TIMEOUT_MS = 30_000;

/** For `net.createServer` and `net.connect` options. */
export const TCP_KEEPALIVE = { keepAlive: true, keepAliveInitialDelay: TCP_KEEPALIVE_MS } as const;

/** TCP_USER_TIMEOUT on an accepted socket, or on a dialed one once it connected. */
export function setUserTimeout(socket: Socket): void {
  if (socket.connecting) socket.once('connect', () => setTcpUserTimeout(socket, TCP_USER_TIMEOUT_MS));
  else setTcpUserTimeout(socket, TCP_USER_TIMEOUT_MS);
}
