// getOriginalDst(socket): where a connection was going before iptables REDIRECTed it to the proxy.
// Reads SO_ORIGINAL_DST (IPv4) or IP6T_SO_ORIGINAL_DST (IPv6) through our N-API addon
// (packages/proxy/native, built by `npm run setup`) from the socket's file descriptor.
import type { Socket } from 'node:net';
import { loadAddon, tryAddon, type OriginalDst } from './addon.js';
import { NotRedirectedError, OriginalDstError } from './errors.js';

/**
 * Loads the addon now: a proxy that will read SO_ORIGINAL_DST checks at start-up that it can, instead
 * of reporting ready and then resetting every redirected connection. Throws AddonMissingError.
 */
export function requireAddon(): void {
  loadAddon();
}

/** The socket's file descriptor, or undefined (closed, still connecting, or not a TCP socket). */
function fdOf(socket: Socket): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/**
 * TCP_USER_TIMEOUT on a connected socket: sent data unacknowledged for `ms` ends the connection (ETIMEDOUT),
 * where the kernel would otherwise retransmit for about 15 minutes. Best effort: false, nothing set, when
 * the socket has no descriptor or the addon is not built (the proxy checked the addon at start).
 */
export function setTcpUserTimeout(socket: Socket, ms: number): boolean {
  const fd = fdOf(socket);
  if (fd === undefined) return false;
  const lib = tryAddon();
  if (lib === undefined) return false;
  try {
    lib.setTcpUserTimeout(fd, ms);
    return true;
  } catch {
    return false; // e.g. the socket closed in between (EBADF)
  }
}

/** The socket's TCP_USER_TIMEOUT in ms, as the kernel has it (0: the kernel's default). Throws like the addon. */
export function getTcpUserTimeout(socket: Socket): number {
  const fd = fdOf(socket);
  if (fd === undefined)
    throw new OriginalDstError('MINIMESH_PROXY_ORIGINAL_DST_FAILED', 'the socket has no file descriptor');
  return loadAddon().getTcpUserTimeout(fd);
}

function unmap(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/**
 * The destination the peer dialed, for a socket accepted from a REDIRECTed connection.
 * Throws NotRedirectedError when the connection reached us directly, AddonMissingError when the addon
 * is not built, OriginalDstError for anything else (closed socket, not TCP).
 */
export function getOriginalDst(socket: Socket): OriginalDst {
  const lib = loadAddon();
  const context = `original destination of ${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'} → ${socket.localAddress ?? '?'}:${socket.localPort ?? '?'}`;
  const fd = fdOf(socket);
  if (fd === undefined) {
    throw new OriginalDstError(
      'MINIMESH_PROXY_ORIGINAL_DST_FAILED',
      `${context}: the socket has no file descriptor (closed, or not a TCP socket)`,
    );
  }
  let dst: OriginalDst;
  try {
    dst = lib.getOriginalDst(fd);
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') {
      throw new NotRedirectedError(`${context}: the connection was not redirected by iptables (no NAT entry for it)`, {
        cause: err,
      });
    }
    throw new OriginalDstError('MINIMESH_PROXY_ORIGINAL_DST_FAILED', `${context}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  // With conntrack active, a connection that was never NATed still has an entry whose original
  // destination is simply our own address: that is "not redirected" too.
  if (dst.port === socket.localPort && unmap(dst.address) === unmap(socket.localAddress ?? '')) {
    throw new NotRedirectedError(
      `${context}: the connection was not redirected by iptables (it was sent to this address directly)`,
    );
  }
  return { address: unmap(dst.address), port: dst.port, family: unmap(dst.address).includes(':') ? 6 : 4 };
}
