// The server role of the proxy's HTTP/2 engine: a connection whose peer opens streams (odd ids, each a
// request), handed to `onStream` with the request's headers as node:http2's 'stream' event hands them,
// and answered through ServerStream.respond(). A request that breaks RFC 9113's rules for its header
// fields is reset (PROTOCOL_ERROR) before the proxy sees it; one whose header list is over the size we
// advertised gets 431; one beyond the concurrent streams we advertised is refused (REFUSED_STREAM),
// which a client may retry elsewhere.
import type { Socket } from 'node:net';
import type { IncomingHttpHeaders as H2Headers, OutgoingHttpHeaders } from 'node:http2';
import { ErrorCode, Flag, FrameError, rstStreamFrame } from './frames.js';
import { headerListSize, HeaderError, httpDate, requestHeaders, toFieldList } from './fields.js';
import { H2Session, type H2SessionOptions } from './session.js';
import { H2Stream } from './stream.js';

export interface RespondOptions {
  /** The response has no body: HEADERS with END_STREAM. */
  endStream?: boolean;
  /** After the body, 'wantTrailers' is emitted and END_STREAM waits for sendTrailers() or close(). */
  waitForTrailers?: boolean;
}

/** A request stream of a server connection: read the request body, respond(), write the response body. */
export class ServerStream extends H2Stream {
  /** The request had no body (its HEADERS carried END_STREAM). */
  endAfterHeaders = false;
  protected override readonly drainUnread = true;

  /** The response head; `:status` defaults to 200 and a Date is added unless given. */
  respond(headers: OutgoingHttpHeaders = {}, opts?: RespondOptions): void {
    if (this.destroyed || this.closed)
      throw Object.assign(new Error('The stream has been destroyed'), { code: 'ERR_HTTP2_INVALID_STREAM' });
    if (this.headersSent)
      throw Object.assign(new Error('Response has already been initiated.'), { code: 'ERR_HTTP2_HEADERS_SENT' });
    const status = headers[':status'] ?? 200;
    const n = Number(status);
    if (!(n >= 200 && n <= 599))
      throw new HeaderError('ERR_HTTP2_STATUS_INVALID', `Invalid status code: ${String(status)}`);
    const fields = toFieldList(headers);
    if (headers[':status'] === undefined) fields.unshift(':status', '200');
    if (headers.date === undefined) fields.push('date', httpDate());
    const endStream = opts?.endStream === true;
    this.waitForTrailers = opts?.waitForTrailers === true;
    this.headersSent = true;
    this.session.sendHeaders(this, fields, endStream);
    if (endStream) {
      this.localEnded = true;
      this.end();
      this.maybeClose();
    }
  }

  protected implicitHead(): void {
    this.respond({ ':status': 200 });
  }
}

export type H2ServerOptions = H2SessionOptions;

/** One server-side connection. */
export class H2ServerSession extends H2Session {
  constructor(
    socket: Socket,
    opts: H2ServerOptions,
    private readonly onStream: (stream: ServerStream, headers: H2Headers) => void,
  ) {
    super(socket, opts, true);
    this.sendPreface();
  }

  protected isIdle(streamId: number): boolean {
    // Odd ids are the client's: idle above the highest it opened. Even ids would be ours: we open none.
    return streamId % 2 === 1 ? streamId > this.lastPeerStreamId : true;
  }

  protected onNewHeaders(streamId: number, flags: number, fields: string[], malformed: string | undefined): void {
    if (streamId % 2 === 0) throw new FrameError('PROTOCOL_ERROR', `the client opened even stream ${streamId}`);
    // A stream this side closed or reset: the frames the peer still sends are ignored.
    if (streamId <= this.lastPeerStreamId) return;
    this.lastPeerStreamId = streamId;
    if (this.closed || this.streams.size >= this.maxConcurrentStreams)
      return void this.queue(rstStreamFrame(streamId, ErrorCode.REFUSED_STREAM));
    const stream = new ServerStream(this, streamId);
    this.streams.set(streamId, stream);
    if (malformed !== undefined) return this.resetStream(stream, ErrorCode.PROTOCOL_ERROR);
    const checked = requestHeaders(fields);
    if (checked.error !== undefined) return this.resetStream(stream, ErrorCode.PROTOCOL_ERROR);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if (headerListSize(fields) > this.maxHeaderListSize) {
      // The whole request is refused; what body it has left is not read (RST_STREAM NO_ERROR).
      stream.respond({ ':status': 431 }, { endStream: true });
      if (!endStream) this.resetStream(stream, ErrorCode.NO_ERROR);
      return;
    }
    const headers = checked.headers;
    const cl = headers['content-length'];
    if (cl !== undefined) {
      const n = /^[0-9]+$/.test(cl) ? Number(cl) : NaN;
      if (!Number.isSafeInteger(n) || (endStream && n !== 0)) return this.resetStream(stream, ErrorCode.PROTOCOL_ERROR);
      stream.contentLength = n;
    }
    stream.endAfterHeaders = endStream;
    this.onStream(stream, headers);
    if (endStream && !stream.closed) stream.onEnd();
  }
}

/**
 * Serves HTTP/2 on `socket` (prior knowledge, or ALPN h2 after TLS); every request stream goes to
 * `onStream`. Bytes already read of the socket (detection's) go to the session's receive() at once,
 * before the socket flows (on the next tick).
 */
export function serveHttp2(
  socket: Socket,
  opts: H2ServerOptions,
  onStream: (stream: ServerStream, headers: H2Headers) => void,
): H2ServerSession {
  const session = new H2ServerSession(socket, opts, onStream);
  socket.resume();
  return session;
}
