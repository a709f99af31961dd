// Inbound admit: Accept → InboundAccept, only for a connection iptables redirected (it has an original
// destination) whose destination is not one of the proxy's own ports (it would loop). Anything else is
// counted in proxy_errors_total and reset.
import type { Logger } from '@minimesh/runtime';
import type { Handler, Layer } from '../layers.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { resetSocket } from '../respond.js';
import type { Accept, InboundAccept } from '../targets.js';

export function isLoop(orig: { port: number } | undefined, proxyPorts: readonly number[]): boolean {
  return orig !== undefined && proxyPorts.includes(orig.port);
}

export function pushAdmit(opts: {
  /** Ports of this proxy: a connection whose original destination is one of them would loop. */
  proxyPorts: readonly number[];
  metrics: ProxyMetrics;
  log: Logger;
}): Layer<Handler<InboundAccept>, Handler<Accept>> {
  const { proxyPorts, metrics, log } = opts;
  return (next) => (accept) => {
    const { socket, orig } = accept;
    if (!orig) {
      metrics.error('inbound', 'MINIMESH_PROXY_NO_ORIGINAL_DST');
      log.debug({ peer: socket.remoteAddress }, 'inbound connection without an original destination refused');
      return resetSocket(socket);
    }
    if (isLoop(orig, proxyPorts)) {
      metrics.error('inbound', 'MINIMESH_PROXY_LOOP');
      log.warn({ orig }, `inbound connection to ${orig.key} would loop into the proxy`);
      return resetSocket(socket);
    }
    return next({ socket, orig, clientIp: socket.remoteAddress ?? '' });
  };
}
