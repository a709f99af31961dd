// An opaque connection as the TCP stages see it: its socket, the bytes already read from it, and how to
// refuse it. Raw TCP has no error message: a refused connection is counted and reset (respond.ts).
import type { Socket } from 'node:net';
import type { Rejectable } from '../layers.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { errorCode, resetSocket } from '../respond.js';
import type { Direction, Opaque } from '../targets.js';

export interface TcpStream extends Rejectable {
  readonly socket: Socket;
  /** Bytes already read (detection's); written upstream first. */
  readonly prefix: Buffer;
}

/** The stream of an opaque connection whose refusals count in proxy_errors_total. */
export function tcpStream(target: Opaque<unknown>, direction: Direction, metrics: ProxyMetrics): TcpStream {
  const { socket, prefix } = target;
  return {
    socket,
    prefix,
    reject(err) {
      metrics.error(direction, errorCode(err));
      resetSocket(socket);
    },
  };
}
