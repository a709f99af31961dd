// Inbound detect: a connection → HTTP or opaque, from its first bytes (detect/). Skipped (opaque) for TLS
// passed through, for the configured opaque ports, and for ports whose policy says opaque or TLS.
import { detectConnection } from '../detect/detect-connection.js';
import type { Handler, Layer, Protocols } from '../layers.js';
import type { InboundConn } from '../targets.js';
import type { Detecting } from './tls.js';

export function pushDetect(opts: {
  /** Ports whose traffic is opaque (configured or by policy). */
  opaquePort: (port: number) => boolean;
  timeoutMs: number;
}): Layer<Protocols<InboundConn>, Handler<Detecting>> {
  return (next) => async (target) => {
    const { parent, socket, prefix } = target;
    const detected = await detectConnection(parent, socket, {
      opaque: target.opaque || opts.opaquePort(parent.orig.port),
      prefix,
      timeoutMs: opts.timeoutMs,
    });
    if (!detected) return;
    if (detected.kind === 'opaque') await next.opaque(detected);
    else next.http(detected);
  };
}
