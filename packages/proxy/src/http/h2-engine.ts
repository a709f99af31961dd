// What the proxy's stages use of HTTP/2 sessions and streams, whichever engine made them: the proxy's
// own (src/h2, the default) or node:http2 (MINIMESH_PROXY_HTTP2_ENGINE=node, kept for comparison in the
// bench and as a fallback). Both engines' objects fit these shapes, so exchange.ts, forward.ts,
// respond.ts and the pools do not know which one carries a request.
import type { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { OutgoingHttpHeaders } from 'node:http2';

export type { H2Engine } from '../config/proxy.js';

/** A caller's request stream (server side): read the request, respond(), write the response. */
export interface CallerStream extends Duplex {
  /** The RST_STREAM code the stream closed with (NO_ERROR when it ended normally). */
  readonly rstCode: number | undefined;
  readonly headersSent: boolean;
  /** The request had no body. */
  readonly endAfterHeaders: boolean;
  readonly session: { readonly socket: { readonly remoteAddress?: string; readonly remotePort?: number } } | undefined;
  respond(headers?: OutgoingHttpHeaders, options?: { endStream?: boolean; waitForTrailers?: boolean }): void;
  sendTrailers(headers: OutgoingHttpHeaders): void;
  close(code?: number, callback?: () => void): void;
}

/** A caller's connection (server side), as the handoff tracks it and the drain closes it (GOAWAY). */
export interface CallerSession {
  readonly socket: unknown;
  close(): void;
  once(event: 'close', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** A request stream to an upstream (client side): 'response' (headers, flags), 'trailers', the body. */
export interface UpstreamStream extends Duplex {
  readonly rstCode: number | undefined;
  close(code?: number, callback?: () => void): void;
}

/** A connection to an upstream (client side), as the pools keep it. */
export interface UpstreamSession extends EventEmitter {
  readonly connecting: boolean;
  readonly closed: boolean;
  readonly destroyed: boolean;
  request(headers: OutgoingHttpHeaders, options?: { endStream?: boolean }): UpstreamStream;
  setTimeout(ms: number, callback?: () => void): void;
  close(callback?: () => void): void;
  destroy(): void;
}
