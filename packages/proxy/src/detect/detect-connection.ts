// A connection as HTTP or opaque, from its first bytes (detect.ts), for both directions' detect stages.
// Opaque ports (and what a profile or a port's policy marks opaque) skip the sniffing, so protocols where
// the server speaks first see no delay.
import type { Socket } from 'node:net';
import { detect } from './detect.js';
import type { Detected } from '../targets.js';

export interface DetectOptions {
  /** Skip detection: relay the bytes as they are. */
  opaque: boolean;
  /** Bytes an earlier stage already read (the inbound ClientHello peek); detection starts over them. */
  prefix: Buffer;
  /** After this, a silent connection is opaque TCP. */
  timeoutMs: number;
}

/** The connection as HTTP or opaque; undefined (socket destroyed) when the peer closed without a byte. */
export async function detectConnection<T>(
  parent: T,
  socket: Socket,
  opts: DetectOptions,
): Promise<Detected<T> | undefined> {
  if (opts.opaque) {
    socket.pause();
    return { kind: 'opaque', parent, socket, prefix: opts.prefix };
  }
  if (opts.prefix.length > 0) {
    socket.pause();
    socket.unshift(opts.prefix);
  }
  const { protocol, prefix, ended } = await detect(socket, opts.timeoutMs);
  if (ended && prefix.length === 0) {
    socket.destroy();
    return undefined;
  }
  if (protocol === 'opaque') return { kind: 'opaque', parent, socket, prefix };
  return { kind: 'http', protocol, parent, socket, prefix };
}
