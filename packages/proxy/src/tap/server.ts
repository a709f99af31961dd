// The tap server: io.linkerd.proxy.tap.Tap/Observe on the control port (4190), gRPC over HTTP/2 over
// mTLS terminated here with this proxy's certificate. Only the tap service's identity
// (MINIMESH_PROXY_TAP_SVC_NAME) may call it: any other client gets PERMISSION_DENIED, a client without a
// mesh identity UNAUTHENTICATED. proxy-init never redirects 4190, so the tap service's own proxy dials
// it directly. Events leave in the order they happened, through the tap's bounded buffer.
import {
  createSecureServer,
  type Http2SecureServer,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '@minimesh/runtime';
import { tap } from '@minimesh/proto';
import { clientIdentity, mtlsServerOptions, type TlsCredentials } from '../tls/credentials.js';
import { TapMatchError } from './match.js';
import type { ActiveTap, TapLayer } from './tap.js';

export const OBSERVE_PATH = '/io.linkerd.proxy.tap.Tap/Observe';
/** Concurrent Observe calls one proxy serves. */
export const MAX_TAPS = 100;

const GRPC = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  UNAUTHENTICATED: 16,
};

export interface TapServerOptions {
  layer: TapLayer;
  creds: TlsCredentials;
  /** The only client identity allowed to tap. */
  tapSvcName: string;
  log: Logger;
}

/** A gRPC message: 1 byte (not compressed), 4 bytes length (big-endian), the message. */
export function frame(msg: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(5 + msg.length);
  b[0] = 0;
  b.writeUInt32BE(msg.length, 1);
  b.set(msg, 5);
  return b;
}

/** The first gRPC message of a request body, or why there is none. */
export function unframe(body: Buffer): Buffer {
  if (body.length < 5) throw new TapMatchError('request: no gRPC message');
  if (body[0] !== 0) throw new TapMatchError('request: compressed messages are not supported');
  const len = body.readUInt32BE(1);
  if (body.length < 5 + len) throw new TapMatchError('request: truncated gRPC message');
  return body.subarray(5, 5 + len);
}

/** grpc-message: percent-encoding for bytes outside printable ASCII and for '%' only (the gRPC spec). */
export function grpcMessage(s: string): string {
  return [...Buffer.from(s, 'utf8')]
    .map((b) =>
      b >= 0x20 && b <= 0x7e && b !== 0x25
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

function trailersOnly(stream: ServerHttp2Stream, code: number, message: string): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(code),
      'grpc-message': grpcMessage(message),
    },
    { endStream: true },
  );
}

export function createTapServer(opts: TapServerOptions): Http2SecureServer {
  const { layer, creds, tapSvcName, log } = opts;
  const server = createSecureServer(mtlsServerOptions(creds));
  server.on('tlsClientError', (err: Error) => log.debug({ err: err.message }, 'tap: TLS handshake failed'));
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', () => undefined);
    if (headers[':path'] !== OBSERVE_PATH)
      return trailersOnly(stream, GRPC.UNIMPLEMENTED, `tap: no method ${String(headers[':path'])}`);
    const client = clientIdentity(stream.session?.socket as TLSSocket, creds);
    if (client === undefined) {
      log.info({ peer: stream.session?.socket.remoteAddress }, 'tap refused: no client identity');
      return trailersOnly(stream, GRPC.UNAUTHENTICATED, 'tap: the client presented no mesh identity');
    }
    if (client !== tapSvcName) {
      log.info({ client }, 'tap refused: not the tap service');
      return trailersOnly(
        stream,
        GRPC.PERMISSION_DENIED,
        `tap: client identity ${client} is not the tap service (${tapSvcName})`,
      );
    }
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (c: Buffer) => {
      size += c.length;
      if (size > 64 * 1024) return trailersOnly(stream, GRPC.INVALID_ARGUMENT, 'tap: request larger than 64 KiB');
      chunks.push(c);
    });
    stream.once('end', () => {
      if (stream.headersSent) return;
      let req: tap.ObserveRequest;
      try {
        req = tap.ObserveRequest.decode(unframe(Buffer.concat(chunks)));
      } catch (err) {
        return trailersOnly(stream, GRPC.INVALID_ARGUMENT, `tap: ${(err as Error).message}`);
      }
      if (layer.count >= MAX_TAPS)
        return trailersOnly(stream, GRPC.RESOURCE_EXHAUSTED, `tap: ${MAX_TAPS} taps are already running`);
      serve(stream, req);
    });
  });

  function serve(stream: ServerHttp2Stream, req: tap.ObserveRequest): void {
    let t: ActiveTap;
    let scheduled = false;
    let waiting = false;
    const flush = () => {
      scheduled = false;
      if (stream.destroyed || waiting) return;
      for (const ev of t.drain()) {
        if (!stream.write(frame(tap.TapEvent.encode(ev).finish()))) {
          // HTTP/2 flow control: wait for the reader; new events meanwhile stay in the bounded buffer.
          waiting = true;
          stream.once('drain', () => {
            waiting = false;
            flush();
          });
          return;
        }
      }
      if (t.complete && t.queued === 0) {
        layer.unregister(t);
        if (t.dropped > 0)
          log.info({ dropped: t.dropped }, 'tap: events dropped (the reader was slower than the traffic)');
        stream.end();
      }
    };
    try {
      t = layer.register(req, () => {
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    } catch (err) {
      return trailersOnly(stream, GRPC.INVALID_ARGUMENT, `tap: ${(err as Error).message}`);
    }
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(GRPC.OK) }));
    stream.on('close', () => layer.unregister(t));
    log.info({ limit: req.limit, taps: layer.count }, 'tap started');
    if (t.complete) stream.end();
  }

  return server;
}
