// Outbound relay, the last stage of the opaque chain: Balanced → a connection to the endpoint (mTLS when
// meshed, transport/connector.ts), counted as a dst connection, the endpoint's load tracked until it
// connects, and bytes relayed both ways (tcp/relay.ts) after the ones detection read. A failed connect
// is counted and the app's connection reset.
import type { Logger } from '@minimesh/runtime';
import { toConnectError } from '../errors.js';
import type { RequestHandler } from '../layers.js';
import { trackSocket, type ProxyMetrics } from '../metrics/metrics.js';
import type { OutboundLabels } from '../metrics/traffic-labels.js';
import { resetSocket } from '../respond.js';
import { relay } from '../tcp/relay.js';
import type { TcpStream } from '../tcp/stream.js';
import type { Balanced } from '../targets.js';
import type { Connector } from '../transport/connector.js';

export function relayTcp(opts: {
  connector: Pick<Connector, 'meshIdentity' | 'stream'>;
  labels: OutboundLabels;
  metrics: ProxyMetrics;
  log: Logger;
}): RequestHandler<Balanced, TcpStream> {
  const { connector, labels, metrics, log } = opts;
  return ({ concrete, endpoint: ep }, stream) => {
    const identity = connector.meshIdentity(ep);
    let up;
    try {
      up = connector.stream(ep);
    } catch (err) {
      return stream.reject(err);
    }
    trackSocket(up, metrics.connection(labels.endpoint(concrete.authority, ep, identity), 'dst'));
    const load = ep.load;
    const loadT0 = load?.start() ?? 0;
    const { socket } = stream;
    relay(socket, up, {
      first: stream.prefix,
      onConnect: () => load?.end(loadT0),
      onConnectError: (err) => {
        load?.end(loadT0);
        const e = toConnectError(ep.key, err, identity);
        metrics.error('outbound', e.code);
        log.debug({ err: e.message }, 'outbound TCP connect failed');
        resetSocket(socket);
      },
    });
  };
}
