// Outbound detect: like Linkerd, ask destination's profile first, so a port it marks opaque (a Service or
// pod annotation) skips detection as the configured opaque ports do; then the shared detection.
import type { PortRange } from '@minimesh/config';
import { portInRanges } from '@minimesh/config';
import type { DestinationResolver } from '../destination/resolver.js';
import { detectConnection } from '../stack/detect.js';
import type { Accept, Detected } from '../targets.js';

const EMPTY = Buffer.alloc(0);

export interface OutboundDetectOptions {
  resolver: DestinationResolver;
  opaquePorts: PortRange[];
  timeoutMs: number;
}

export function createOutboundDetect(
  opts: OutboundDetectOptions,
): (accept: Accept) => Promise<Detected<Accept> | undefined> {
  return async (accept) => {
    const { socket, orig } = accept;
    let opaque = orig !== undefined && portInRanges(orig.port, opts.opaquePorts);
    if (orig && !opaque) {
      socket.pause();
      opaque = (await opts.resolver.profile(orig.ip, orig.port))?.opaqueProtocol === true;
    }
    return detectConnection(accept, socket, { opaque, prefix: EMPTY, timeoutMs: opts.timeoutMs });
  };
}
