// Giving peeked bytes back. node:http and node:tls servers read buffered data from a net.Socket
// (pause → unshift → emit 'connection' → resume), but node:http2 consumes the socket handle natively and
// would miss them, so for h2 the socket is wrapped in a Duplex that replays the prefix first.
import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';

/** Puts `prefix` back at the head of the paused socket's read buffer. */
export function unshiftPrefix(socket: Socket, prefix: Buffer): void {
  socket.pause();
  if (prefix.length > 0) socket.unshift(prefix);
}

/** A Duplex over `socket` whose readable side starts with `prefix` (for node:http2 servers). */
export function prefixedDuplex(socket: Socket, prefix: Buffer): Duplex {
  const d = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _enc, cb) {
      socket.write(chunk, cb);
    },
    final(cb) {
      socket.end();
      cb();
    },
    destroy(err, cb) {
      socket.destroy(err ?? undefined);
      cb(err);
    },
  });
  if (prefix.length > 0) d.push(prefix);
  socket.on('data', (c: Buffer) => {
    if (!d.push(c)) socket.pause();
  });
  socket.on('end', () => d.push(null));
  socket.on('error', (e) => d.destroy(e));
  socket.on('close', () => d.destroy());
  // Expose the addresses http2 and our handlers look at.
  Object.defineProperties(d, {
    remoteAddress: { get: () => socket.remoteAddress },
    remotePort: { get: () => socket.remotePort },
    localAddress: { get: () => socket.localAddress },
    localPort: { get: () => socket.localPort },
  });
  socket.resume();
  return d;
}
