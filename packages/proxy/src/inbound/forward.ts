// Inbound forward: every request and connection goes to the app on 127.0.0.1:<original port>; the
// client's mesh identity travels in l5d-client-id, which (like any x-minimesh-* header) only this proxy may set.
import { CLIENT_ID_HEADER, isMeshRequestHeader } from '../http/headers.js';
import type { HttpExchange } from '../http/exchange.js';
import { plainEndpoint, type Endpoint, type InboundConn } from '../targets.js';

export const APP_HOST = '127.0.0.1';

/** The app endpoints, one per port. */
export function createAppEndpoints(): (conn: InboundConn) => Endpoint {
  const byPort = new Map<number, Endpoint>();
  return (conn) => {
    const port = conn.orig.port;
    let ep = byPort.get(port);
    if (!ep) byPort.set(port, (ep = plainEndpoint(APP_HOST, port)));
    return ep;
  };
}

/**
 * Drops the mesh's own request headers (l5d-client-id, x-minimesh-*) that the caller sent, meshed or
 * not; returns the client-id header to add (only after mTLS named the client). Linkerd strips
 * l5d-client-id the same way before setting it from the verified certificate.
 */
export function clientIdHeaders(conn: InboundConn, ex: HttpExchange): Record<string, string> | undefined {
  const headers = ex.headers;
  for (const name in headers) if (isMeshRequestHeader(name)) delete headers[name];
  return conn.clientId ? { [CLIENT_ID_HEADER]: conn.clientId } : undefined;
}
