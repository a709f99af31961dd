// Inbound relay, the last stage of the opaque chain: the connection's bytes (after the ones detection
// read) to the app's port and back (tcp/relay.ts). A failed connect to the app is counted and the
// client's connection reset.
import { toConnectError } from '../errors.js';
import type { Handler } from '../layers.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { resetSocket } from '../respond.js';
import { relay } from '../tcp/relay.js';
import type { InboundConn, Opaque } from '../targets.js';
import type { AppEndpoints } from '../transport/app.js';
import type { Connector } from '../transport/connector.js';

export function relayToApp(opts: {
  connector: Pick<Connector, 'stream'>;
  metrics: ProxyMetrics;
  app: AppEndpoints;
}): Handler<Opaque<InboundConn>> {
  const { connector, metrics, app } = opts;
  return (target) => {
    const { socket, prefix } = target;
    const ep = app.of(target.parent.orig.port);
    relay(socket, connector.stream(ep), {
      first: prefix,
      onConnectError: (err) => {
        metrics.error('inbound', toConnectError(ep.key, err).code);
        resetSocket(socket);
      },
    });
  };
}
