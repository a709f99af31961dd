// Inbound authorize for connections that are not HTTP (opaque ports, TLS passed through, undetected):
// the port's policy admits the client or the connection is reset (policy/inbound-authz.ts counts it).
import type { Handler, Layer } from '../layers.js';
import { authzConnOf, type InboundAuthz } from '../policy/inbound-authz.js';
import { resetSocket } from '../respond.js';
import type { InboundConn, Opaque } from '../targets.js';

export function pushAuthorizeTcp(
  authz: InboundAuthz | undefined,
): Layer<Handler<Opaque<InboundConn>>, Handler<Opaque<InboundConn>>> {
  return (next) => {
    if (authz === undefined) return next;
    return (target) => {
      if (!authz.admitConnection(authzConnOf(target.parent))) return resetSocket(target.socket);
      return next(target);
    };
  };
}
