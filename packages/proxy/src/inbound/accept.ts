// Inbound accept: the shared Accept, admitted only when iptables redirected it (it has an original
// destination) and that destination is not one of the proxy's own ports (the connection would loop).
import { ProxyError } from '../errors.js';
import type { Accept, Addr } from '../targets.js';

export function isLoop(orig: { port: number } | undefined, proxyPorts: readonly number[]): boolean {
  return orig !== undefined && proxyPorts.includes(orig.port);
}

/** The original destination of an admitted connection; throws MINIMESH_PROXY_NO_ORIGINAL_DST or _LOOP. */
export function admitInbound(accept: Accept, proxyPorts: readonly number[]): Addr {
  const { orig } = accept;
  if (!orig)
    throw new ProxyError(
      'MINIMESH_PROXY_NO_ORIGINAL_DST',
      `inbound connection from ${accept.socket.remoteAddress}: no original destination`,
    );
  if (isLoop(orig, proxyPorts))
    throw new ProxyError('MINIMESH_PROXY_LOOP', `inbound connection to ${orig.key} would loop into the proxy`);
  return orig;
}
