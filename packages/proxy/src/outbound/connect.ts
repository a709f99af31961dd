// Outbound connect: Balanced → Connected, where a request goes (transport/connector.ts): a meshed endpoint
// gets its one multiplexed HTTP/2 session over mTLS (HTTP/1 rides it, upgraded), an unmeshed one an
// HTTP/1 keep-alive pool or a plaintext HTTP/2 session, an HTTP/1 Upgrade a raw connection of its own.
// The request's metric labels (the endpoint, its TLS, the authority) are fixed here.
import type { HttpRequest } from '../http/exchange.js';
import type { Connected, StreamUpstream } from '../http/upstream.js';
import type { Layer, RequestHandler } from '../layers.js';
import type { OutboundLabels } from '../metrics/traffic-labels.js';
import type { Balanced } from '../targets.js';
import type { Connector } from '../transport/connector.js';

export function pushConnect<R extends HttpRequest>(opts: {
  connector: Pick<Connector, 'meshIdentity' | 'http' | 'stream'>;
  labels: OutboundLabels;
}): Layer<RequestHandler<Connected, R>, RequestHandler<Balanced, R>> {
  const { connector, labels } = opts;
  return (next) => (target, req) => {
    const { concrete, endpoint } = target;
    const identity = connector.meshIdentity(endpoint);
    const l = labels.endpoint(concrete.authority, endpoint, identity);
    if (!req.upgrade) {
      const upstream = connector.http(endpoint, req.protocol);
      return next({ upstream, labels: l, authority: concrete.authority, extra: undefined }, req);
    }
    let upstream: StreamUpstream;
    try {
      upstream = { kind: 'stream', endpoint, identity, socket: connector.stream(endpoint) };
    } catch (err) {
      return req.fail(err);
    }
    next({ upstream, labels: l, authority: concrete.authority, extra: undefined }, req);
  };
}
