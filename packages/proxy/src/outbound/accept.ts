// Outbound accept: the listener iptables redirects the pod's outbound TCP to, and the original destination.
import { createServer, type Server, type Socket } from 'node:net';
import { getOriginalDst } from '../native/index.js';

export interface OutboundAccept {
  socket: Socket;
  /** Where the app was connecting; undefined when the connection reached the proxy directly. */
  orig: { ip: string; port: number } | undefined;
}

export function originalDst(socket: Socket): { ip: string; port: number } | undefined {
  try {
    const d = getOriginalDst(socket);
    return { ip: d.address, port: d.port };
  } catch {
    return undefined;
  }
}

export type OriginalDstFn = (socket: Socket) => { ip: string; port: number } | undefined;

export function createOutboundAccept(
  onAccept: (a: OutboundAccept) => void,
  origDst: OriginalDstFn = originalDst,
): Server {
  return createServer({ noDelay: true, pauseOnConnect: false }, (socket) => {
    socket.setNoDelay(true);
    onAccept({ socket, orig: origDst(socket) });
  });
}
