// Inbound protocol detection (after TLS, if any); opaque ports skip it.
import type { Socket } from 'node:net';
import { portInRanges, type PortRange } from '@minimesh/config';
import { detect, type Protocol } from '../detect/detect.js';

export async function detectInbound(
  socket: Socket,
  port: number,
  opaquePorts: PortRange[],
  timeoutMs: number,
  prefix: Buffer,
): Promise<{ protocol: Protocol; prefix: Buffer; ended: boolean }> {
  if (portInRanges(port, opaquePorts)) return { protocol: 'opaque', prefix, ended: false };
  if (prefix.length > 0) {
    // Bytes already peeked (plaintext ClientHello check): give them back and detect over all of it.
    socket.pause();
    socket.unshift(prefix);
  }
  return detect(socket, timeoutMs);
}
