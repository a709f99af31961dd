// Originating mTLS (the outbound tls stage): TLS 1.3 to the endpoint, SNI = its identity, chain verified against the trust anchors
// (in the SecureContext) and the leaf required to name exactly that identity; our leaf presented.
import type { Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { ProxyError } from '../errors.js';
import { dialTcp } from '../tcp/liveness.js';
import { checkPeerIdentity, type TlsCredentials } from './credentials.js';

export function connectMtls(
  creds: TlsCredentials,
  ip: string,
  port: number,
  identity: string,
  alpn: string[],
  timeoutMs: number,
): TLSSocket {
  const context = creds.context;
  if (!context)
    throw new ProxyError('MINIMESH_PROXY_NOT_READY', `endpoint ${ip}:${port}: no certificate yet to originate mTLS`);
  // Our own TCP socket (dialTcp) with TCP_NODELAY: multiplexed HTTP/2 writes small frames while earlier
  // data is still unacknowledged, and Nagle + delayed ACK would hold them for tens of milliseconds.
  const tcp = dialTcp(ip, port);
  const socket = tlsConnect({
    socket: tcp,
    host: ip,
    port,
    servername: identity,
    secureContext: context,
    ALPNProtocols: alpn.length > 0 ? alpn : undefined,
    minVersion: 'TLSv1.3',
    rejectUnauthorized: true,
    checkServerIdentity: checkPeerIdentity(identity),
  });
  tcp.on('error', (err) => socket.destroy(err));
  armConnectTimeout(socket, timeoutMs, `${ip}:${port}`);
  return socket;
}

/** Destroys the socket with a MINIMESH_CONNECT_TIMEOUT error if it has not connected in time. */
export function armConnectTimeout(socket: Socket, timeoutMs: number, target: string): void {
  const t = setTimeout(() => {
    const err = new Error(`connect timed out after ${timeoutMs} ms`) as NodeJS.ErrnoException;
    err.code = 'MINIMESH_CONNECT_TIMEOUT';
    socket.destroy(err);
  }, timeoutMs);
  const clear = () => clearTimeout(t);
  socket.once('secureConnect', clear);
  socket.once('connect', () => {
    if (!('encrypted' in socket)) clear();
  });
  socket.once('close', clear);
  void target;
}
