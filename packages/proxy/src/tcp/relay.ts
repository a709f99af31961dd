// The one TCP relay, for opaque connections (both directions) and HTTP/1 Upgrade tunnels: once the
// upstream connects, write what must go first, then copy bytes both ways with half-close. A failure
// before the upstream connects is the caller's to answer (reset, or an HTTP error for an Upgrade);
// after it, the downstream is reset so the client sees the tunnel broke.
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { resetSocket } from '../respond.js';

export interface RelayOptions {
  /** Bytes to send upstream first (detection's prefix, a replayed request head). */
  first: Buffer | undefined;
  /** The upstream is connected and the first bytes are written. */
  onConnect?: () => void;
  /** The upstream failed before it connected; the downstream is left to the caller. */
  onConnectError: (err: Error) => void;
}

export function relay(down: Socket, up: Socket, opts: RelayOptions): void {
  let connected = false;
  // An mTLS upstream (a TLSSocket) is ready at 'secureConnect', plain TCP at 'connect'.
  up.once((up as Partial<TLSSocket>).encrypted === true ? 'secureConnect' : 'connect', () => {
    connected = true;
    if (opts.first !== undefined && opts.first.length > 0) up.write(opts.first);
    opts.onConnect?.();
    up.pipe(down);
    down.pipe(up);
    down.resume();
  });
  up.on('error', (err) => {
    if (!connected) opts.onConnectError(err);
    else resetSocket(down);
  });
  down.on('error', () => up.destroy());
  down.on('close', () => up.destroy());
  // An upstream that closed without ending (the pipe ends the downstream after a clean end and lets it flush).
  up.on('close', () => {
    if (connected && !down.writableEnded) down.destroy();
  });
}
