// Inbound accept: the listener iptables redirects the pod's inbound TCP to; original destination and
// the loop check (a connection whose original destination is one of the proxy's own ports is refused).
import { createServer, type Server, type Socket } from 'node:net';
import { originalDst, type OriginalDstFn } from '../outbound/accept.js';

export interface InboundAccept {
  socket: Socket;
  orig: { ip: string; port: number } | undefined;
}

export function isLoop(orig: { port: number } | undefined, proxyPorts: readonly number[]): boolean {
  return orig !== undefined && proxyPorts.includes(orig.port);
}

export function createInboundAccept(
  onAccept: (a: InboundAccept) => void,
  origDst: OriginalDstFn = originalDst,
): Server {
  return createServer({ noDelay: true }, (socket) => {
    socket.setNoDelay(true);
    onAccept({ socket, orig: origDst(socket) });
  });
}
