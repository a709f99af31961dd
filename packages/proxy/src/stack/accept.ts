// Accept: the listener iptables redirects a pod's TCP to (outbound 4140, inbound 4143). Every accepted
// socket becomes an Accept target carrying where the app was connecting (SO_ORIGINAL_DST).
import { createServer, type Server, type Socket } from 'node:net';
import { getOriginalDst } from '../native/index.js';
import { toAddr, type Accept, type Addr, type Direction } from '../targets.js';

/** How the original destination is learned (tests and the loopback bench pass their own). */
export type OriginalDstFn = (socket: Socket) => { ip: string; port: number } | undefined;

/** SO_ORIGINAL_DST of a redirected socket; undefined when it was not redirected. */
export function originalDst(socket: Socket): { ip: string; port: number } | undefined {
  try {
    const d = getOriginalDst(socket);
    return { ip: d.address, port: d.port };
  } catch {
    return undefined;
  }
}

export function createAccept(
  direction: Direction,
  next: (target: Accept) => void,
  origDst: OriginalDstFn = originalDst,
): Server {
  return createServer({ noDelay: true }, (socket) => {
    socket.setNoDelay(true);
    const o = origDst(socket);
    const orig: Addr | undefined = o ? toAddr(o.ip, o.port) : undefined;
    next({ direction, socket, orig });
  });
}
