// Protocol detection from a connection's first bytes, as linkerd2-proxy does it:
// "PRI * HTTP/2.0" → h2; an HTTP/1 request line → http1; anything else (or a timeout) → opaque.
import type { Socket } from 'node:net';

export type Protocol = 'h2' | 'http1' | 'opaque';
/** 'more' means the bytes so far are a prefix of something HTTP-like: read more before deciding. */
export type Detection = Protocol | 'more';

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0');
/** Linkerd reads at most 1 KiB before giving up. */
export const MAX_DETECT_BYTES = 1024;
const METHOD = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Decides the protocol from the bytes read so far. */
export function detectProtocol(buf: Buffer): Detection {
  if (buf.length === 0) return 'more';
  const n = Math.min(buf.length, H2_PREFACE.length);
  if (buf.subarray(0, n).equals(H2_PREFACE.subarray(0, n))) return buf.length >= H2_PREFACE.length ? 'h2' : 'more';
  const eol = buf.indexOf('\r\n');
  const line = buf.subarray(0, eol === -1 ? Math.min(buf.length, MAX_DETECT_BYTES) : eol).toString('latin1');
  // A request line is "METHOD SP request-target SP HTTP/1.x".
  const firstSpace = line.indexOf(' ');
  const method = firstSpace === -1 ? line : line.slice(0, firstSpace);
  if (method.length === 0 || !METHOD.test(method) || method.length > 32) return 'opaque';
  if (eol === -1) {
    // Decide early when the line can no longer become "METHOD SP target SP HTTP/1.x".
    const second = line.indexOf(' ', firstSpace + 1);
    if (firstSpace !== -1 && second === firstSpace + 1) return 'opaque';
    if (second !== -1) {
      const version = line.slice(second + 1);
      const want = 'HTTP/1.';
      const n = Math.min(version.length, want.length);
      if (version.slice(0, n) !== want.slice(0, n)) return 'opaque';
    }
    return buf.length >= MAX_DETECT_BYTES ? 'opaque' : 'more';
  }
  return /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+ \S+ HTTP\/1\.[01]$/.test(line) ? 'http1' : 'opaque';
}

export interface Peeked {
  /** The bytes read so far; they must be given back to the stream (see socket-prefix.ts). */
  prefix: Buffer;
  /** True when the peer closed before sending anything. */
  ended: boolean;
}

/**
 * Reads from a socket until `decide` returns something other than 'more', the peer ends, or the timeout.
 * Leaves the socket paused with nothing consumed beyond the returned prefix.
 */
export function peek<T>(
  socket: Socket,
  decide: (buf: Buffer) => T | 'more',
  timeoutMs: number,
  onTimeout: T,
): Promise<{ result: T; prefix: Buffer; ended: boolean }> {
  return new Promise((resolve) => {
    let buf: Buffer = Buffer.alloc(0);
    let done = false;
    const finish = (result: T, ended: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.pause();
      socket.removeListener('data', onData);
      socket.removeListener('end', onEnd);
      socket.removeListener('error', onEnd);
      socket.removeListener('close', onEnd);
      resolve({ result, prefix: buf, ended });
    };
    const onData = (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const r = decide(buf);
      if (r !== 'more') finish(r, false);
      else if (buf.length >= MAX_DETECT_BYTES * 16) finish(onTimeout, false);
    };
    const onEnd = () => finish(onTimeout, true);
    const timer = setTimeout(() => finish(onTimeout, false), timeoutMs);
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('error', onEnd);
    socket.once('close', onEnd);
    // A socket paused by an earlier peek (its bytes given back with unshift) does not flow again just
    // because a 'data' listener was added: without this, inbound plaintext (the TLS peek, then protocol
    // detection) waited for the whole detect timeout and was then relayed as opaque.
    socket.resume();
  });
}

/** Reads the first bytes and detects the protocol (opaque on timeout). */
export async function detect(
  socket: Socket,
  timeoutMs: number,
): Promise<{ protocol: Protocol; prefix: Buffer; ended: boolean }> {
  const r = await peek<Protocol>(socket, detectProtocol, timeoutMs, 'opaque');
  return { protocol: r.result, prefix: r.prefix, ended: r.ended };
}
