// Inbound connect: Authorized → Connected, to the app on 127.0.0.1:<original port> (transport/app.ts):
// an HTTP/1 keep-alive pool or a plaintext HTTP/2 session (HTTP/1 again for a request a peer proxy
// upgraded, l5d-orig-proto), a raw connection for an HTTP/1 Upgrade. The mesh's own request headers the
// caller sent (l5d-client-id, x-minimesh-*) are dropped, meshed or not; l5d-client-id is set only after
// mTLS named the client (as Linkerd strips and sets it). The request's labels are fixed here.
import { CLIENT_ID_HEADER, isMeshRequestHeader } from '../http/headers.js';
import type { IncomingRequest } from '../http/handoff.js';
import type { Connected } from '../http/upstream.js';
import type { Layer, RequestHandler } from '../layers.js';
import type { InboundLabels } from '../metrics/traffic-labels.js';
import type { Authorized } from '../targets.js';
import type { AppEndpoints } from '../transport/app.js';
import type { Connector } from '../transport/connector.js';

export function pushConnect(opts: {
  connector: Pick<Connector, 'http' | 'stream'>;
  labels: InboundLabels;
  app: AppEndpoints;
}): Layer<RequestHandler<Connected, IncomingRequest>, RequestHandler<Authorized, IncomingRequest>> {
  const { connector, labels, app } = opts;
  return (next) => (target, req) => {
    const { conn } = target;
    req.stripHeaders(isMeshRequestHeader);
    const extra = conn.clientId ? { [CLIENT_ID_HEADER]: conn.clientId } : undefined;
    const endpoint = app.of(conn.orig.port);
    const l = labels.of(conn, req.authority);
    const upstream = req.upgrade
      ? { kind: 'stream' as const, endpoint, identity: undefined, socket: connector.stream(endpoint) }
      : connector.http(endpoint, req.upgradedHttp1 ? 'http1' : req.protocol);
    next({ upstream, labels: l, authority: '', extra }, req);
  };
}
