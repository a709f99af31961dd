// Outbound detect: Accept → HTTP or opaque. Like Linkerd, destination's profile is asked first, so a port
// it marks opaque (a Service or pod annotation) skips detection as the configured opaque ports do; then
// the first bytes decide (detect/).
import type { PortRange } from '@minimesh/config';
import { portInRanges } from '@minimesh/config';
import type { DestinationResolver } from '../destination/resolver.js';
import { detectConnection } from '../detect/detect-connection.js';
import type { Handler, Layer, Protocols } from '../layers.js';
import type { Accept } from '../targets.js';

const EMPTY = Buffer.alloc(0);

export interface OutboundDetectOptions {
  resolver: Pick<DestinationResolver, 'profile'>;
  opaquePorts: PortRange[];
  timeoutMs: number;
}

export function pushDetect(opts: OutboundDetectOptions): Layer<Protocols<Accept>, Handler<Accept>> {
  return (next) => async (accept) => {
    const { socket, orig } = accept;
    let opaque = orig !== undefined && portInRanges(orig.port, opts.opaquePorts);
    if (orig && !opaque) {
      socket.pause();
      opaque = (await opts.resolver.profile(orig.ip, orig.port))?.opaqueProtocol === true;
    }
    const detected = await detectConnection(accept, socket, { opaque, prefix: EMPTY, timeoutMs: opts.timeoutMs });
    if (!detected) return;
    if (detected.kind === 'opaque') await next.opaque(detected);
    else next.http(detected);
  };
}
