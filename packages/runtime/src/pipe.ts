// The byte pipe of minimesh's TCP relays that carry bytes untouched: the local cluster's bridges across
// network namespaces (bridge.js, forwardToNode) and @minimesh/kube's connection-counting relay.
// Also exported alone as @minimesh/runtime/pipe, so a relay process loads nothing else.
import type { Socket } from 'node:net';

/**
 * Pipes a and b both ways, with Nagle's algorithm off on both (a no-op on unix sockets): a relay that
 * holds a small write until the previous one is ACKed meets the peer's delayed ACK, and an HTTP/2
 * answer (HEADERS, then DATA) came back ~40 ms late on one request in three. Either side closing or
 * failing destroys both; `onClose` runs once for each socket that closes.
 */
export function pipeBoth(a: Socket, b: Socket, onClose?: () => void): void {
  a.setNoDelay(true);
  b.setNoDelay(true);
  a.pipe(b);
  b.pipe(a);
  const close = (): void => {
    a.destroy();
    b.destroy();
    onClose?.();
  };
  a.on('error', close).on('close', close);
  b.on('error', close).on('close', close);
}
