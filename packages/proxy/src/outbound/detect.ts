// Outbound protocol detection; opaque ports skip it so server-speaks-first protocols see no delay.
import type { Socket } from 'node:net';
import { portInRanges, type PortRange } from '@minimesh/config';
import { detect, type Protocol } from '../detect/detect.js';

export async function detectOutbound(
  socket: Socket,
  port: number | undefined,
  opaquePorts: PortRange[],
  timeoutMs: number,
): Promise<{ protocol: Protocol; prefix: Buffer; ended: boolean }> {
  if (port !== undefined && portInRanges(port, opaquePorts)) {
    socket.pause();
    return { protocol: 'opaque', prefix: Buffer.alloc(0), ended: false };
  }
  return detect(socket, timeoutMs);
}
