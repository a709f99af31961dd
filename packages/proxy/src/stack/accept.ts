// Accept: the listener iptables redirects a pod's TCP to (outbound 4140, inbound 4143), the first stage
// of both directions. Every accepted socket becomes an Accept target carrying where the app was
// connecting (SO_ORIGINAL_DST); it is kept in `sockets` (the drain's) until it closes. What the rest of
// the chain throws or rejects with is logged and the connection closed.
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '@minimesh/runtime';
import type { Handler, Layer } from '../layers.js';
import { trackSocket, type Labels, type ProxyMetrics } from '../metrics/metrics.js';
import { getOriginalDst } from '../native/index.js';
import { tuneAccepted } from '../tcp/liveness.js';
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

export interface AcceptOptions {
  direction: Direction;
  log: Logger;
  /** The open accepted connections (the drain waits for them). */
  sockets: Set<Socket>;
  /** Default: SO_ORIGINAL_DST. */
  originalDst?: OriginalDstFn | undefined;
  /** Counts each connection under these labels from its accept (outbound; inbound counts after TLS). */
  count?: { metrics: ProxyMetrics; labels: (orig: Addr | undefined) => Labels } | undefined;
}

export function pushAccept(opts: AcceptOptions): Layer<Handler<Accept>, Server> {
  const { direction, sockets, count } = opts;
  const origDst = opts.originalDst ?? originalDst;
  return (next) =>
    createServer((socket) => {
      tuneAccepted(socket);
      const o = origDst(socket);
      const orig: Addr | undefined = o ? toAddr(o.ip, o.port) : undefined;
      socket.on('error', () => undefined);
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      if (count) trackSocket(socket, count.metrics.connection(count.labels(orig)));
      const accept: Accept = { direction, socket, orig };
      try {
        const pending = next(accept);
        if (pending) pending.catch((err: unknown) => failed(accept, err));
      } catch (err) {
        failed(accept, err);
      }
    });

  function failed(accept: Accept, err: unknown): void {
    opts.log.warn({ err }, `${direction} connection failed`);
    accept.socket.destroy();
  }
}
