// One HTTP/2 stream as the proxy's stages use it: a Duplex whose readable side is the peer's DATA (with
// the stream's receive window given back as the application reads, so a slow reader slows the peer)
// and whose writable side becomes DATA frames within the peer's windows (a write's callback waits for
// window and for the socket). It keeps node:http2's surface where the proxy reads it (rstCode, close(),
// 'trailers', 'wantTrailers' / sendTrailers()), so both engines' streams go through the same stages.
// The connection (session.ts) owns the frames; the stream owns its state (RFC 9113 5.1).
import { Duplex } from 'node:stream';
import type { IncomingHttpHeaders as H2Headers, OutgoingHttpHeaders } from 'node:http2';
import { ErrorCode } from './frames.js';
import { toFieldList } from './fields.js';
import type { Socket } from 'node:net';

/** What a stream asks of its connection (session.ts is one); the stream knows no more of it. */
export interface StreamConnection {
  readonly socket: Socket;
  /** The peer's SETTINGS_INITIAL_WINDOW_SIZE: a new stream's send window. */
  readonly peerInitialWindow: number;
  /** Give a stream's receive window back once this much was read. */
  readonly windowUpdateThreshold: number;
  /** DATA a peer may have sent on one stream and not been given back (our SETTINGS_INITIAL_WINDOW_SIZE). */
  readonly streamRecvWindow: number;
  sendHeaders(stream: H2Stream, fields: string[], endStream: boolean): void;
  sendData(stream: H2Stream, chunk: Buffer, off: number, cb: (err?: Error | null) => void): void;
  sendEndStream(stream: H2Stream): void;
  streamWindowUpdate(streamId: number, n: number): void;
  resetStream(stream: H2Stream, code: number, notify?: boolean, err?: Error): void;
  /** The stream closed on the wire: the connection lets go of it. */
  forget(stream: H2Stream, code: number): void;
}

/** Names of the error codes, as node:http2 words them in its errors (NGHTTP2_CANCEL, ...). */
const CODE_NAMES = Object.fromEntries(Object.entries(ErrorCode).map(([k, v]) => [v, `NGHTTP2_${k}`]));

/** The error a stream is destroyed with when its peer reset it (node:http2's ERR_HTTP2_STREAM_ERROR). */
export function streamError(code: number): Error & { code: string } {
  const err = new Error(`Stream closed with error code ${CODE_NAMES[code] ?? code}`) as Error & { code: string };
  err.code = 'ERR_HTTP2_STREAM_ERROR';
  return err;
}

interface PendingWrite {
  chunk: Buffer;
  off: number;
  cb: (err?: Error | null) => void;
}

export abstract class H2Stream extends Duplex {
  /** The RST_STREAM code it closed with (0 when it closed normally); undefined while open. */
  rstCode: number | undefined = undefined;
  /** The stream has closed on the wire (both ends sent END_STREAM, or a reset). */
  override closed = false;
  /** Our HEADERS went out (the response, or the request). */
  headersSent = false;
  /** The peer's END_STREAM came. */
  remoteEnded = false;
  /** Our END_STREAM went out (or a reset was sent). */
  localEnded = false;
  /** How much DATA the peer lets us send on this stream. */
  sendWindow: number;
  /** Bytes the application read that the peer has not been given back yet, and bytes still buffered. */
  private unacked = 0;
  private held = 0;
  /** A write waiting for window; and end() waiting for it. */
  pending: PendingWrite | undefined = undefined;
  private finalCb: ((err?: Error | null) => void) | undefined = undefined;
  /** respond({ waitForTrailers }): after the last DATA, 'wantTrailers' instead of END_STREAM. */
  protected waitForTrailers = false;
  private trailersWanted = false;
  /** content-length of the peer's message (-1: none) and the DATA bytes received. */
  contentLength = -1;
  received = 0;

  constructor(
    readonly session: StreamConnection,
    /** The stream id (0 for a client's stream not opened yet). */
    public id: number,
  ) {
    super({ allowHalfOpen: true, autoDestroy: false, emitClose: true });
    this.sendWindow = session.peerInitialWindow;
  }

  // ---- readable side: DATA from the peer

  /** DATA came (`wireLength` with padding): buffered for the reader; its window is given back as it is read. */
  onData(payload: Buffer, wireLength: number): void {
    // What the peer sent and we have not given back is held + unacked: more than our window is a peer that
    // ignores flow control (RFC 9113 6.9.1), and only this stream is reset (the connection window held).
    if (this.held + this.unacked + wireLength > this.session.streamRecvWindow) {
      return this.session.resetStream(this, ErrorCode.FLOW_CONTROL_ERROR);
    }
    const padding = wireLength - payload.length;
    this.received += payload.length;
    if (this.contentLength >= 0 && this.received > this.contentLength) {
      return this.session.resetStream(this, ErrorCode.PROTOCOL_ERROR);
    }
    if (padding > 0) this.credit(padding);
    if (payload.length === 0) return;
    if (this.push(payload)) this.credit(payload.length);
    else this.held += payload.length;
  }

  /** The peer's END_STREAM. */
  onEnd(): void {
    if (this.contentLength >= 0 && this.received !== this.contentLength) {
      return this.session.resetStream(this, ErrorCode.PROTOCOL_ERROR);
    }
    this.remoteEnded = true;
    this.push(null);
    this.maybeClose();
  }

  private credit(n: number): void {
    this.unacked += n;
    if (this.unacked >= this.session.windowUpdateThreshold && !this.remoteEnded && !this.closed) {
      this.session.streamWindowUpdate(this.id, this.unacked);
      this.unacked = 0;
    }
  }

  override _read(): void {
    if (this.held > 0) {
      const n = this.held;
      this.held = 0;
      this.credit(n);
    }
  }

  // ---- writable side: DATA to the peer

  /** Sends the head first when the application writes without one (node:http2 does the same). */
  protected abstract implicitHead(): void;

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.closed || this.localEnded) return cb();
    if (!this.headersSent) this.implicitHead();
    this.session.sendData(this, chunk, 0, cb);
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (this.pending !== undefined) {
      this.finalCb = cb;
      return;
    }
    this.finish(cb);
  }

  /** The blocked write went out (session.ts): a waiting end() goes on. */
  unblocked(): void {
    const cb = this.finalCb;
    if (cb !== undefined) {
      this.finalCb = undefined;
      this.finish(cb);
    }
  }

  private finish(cb: (err?: Error | null) => void): void {
    if (this.closed || this.localEnded) return cb();
    if (!this.headersSent) this.implicitHead();
    if (this.localEnded) return cb();
    if (this.waitForTrailers) {
      this.trailersWanted = true;
      cb();
      process.nextTick(() => {
        if (!this.closed) this.emit('wantTrailers');
      });
      return;
    }
    this.session.sendEndStream(this);
    this.localEnded = true;
    cb();
    this.maybeClose();
  }

  /** The trailers, once 'wantTrailers' came: END_STREAM with them. */
  sendTrailers(headers: OutgoingHttpHeaders): void {
    if (this.closed) return;
    if (!this.trailersWanted) {
      throw Object.assign(new Error('Trailing headers cannot be sent until after the wantTrailers event is emitted'), {
        code: 'ERR_HTTP2_TRAILERS_NOT_READY',
      });
    }
    this.trailersWanted = false;
    this.session.sendHeaders(this, toFieldList(headers, true), true);
    this.localEnded = true;
    this.maybeClose();
  }

  /**
   * Closes the stream with `code`. NO_ERROR while trailers are awaited ends it cleanly (END_STREAM, no
   * trailers); otherwise RST_STREAM with the code, as node:http2's close() does.
   */
  close(code: number = ErrorCode.NO_ERROR, callback?: () => void): void {
    if (callback) this.once('close', callback);
    if (this.closed) return;
    if (code === ErrorCode.NO_ERROR && this.trailersWanted) {
      this.trailersWanted = false;
      this.session.sendEndStream(this);
      this.localEnded = true;
      if (this.remoteEnded) return this.maybeClose();
    }
    this.session.resetStream(this, code);
  }

  /** Both ends are done: the stream closes without error. */
  protected maybeClose(): void {
    if (this.remoteEnded && this.localEnded && !this.closed) {
      this.session.forget(this, ErrorCode.NO_ERROR);
      this.afterClose(ErrorCode.NO_ERROR, false);
    }
  }

  /**
   * The stream closed on the wire with `code` (`byPeer`: the peer reset it). A normal close lets the
   * reader take what is buffered first (a server stream nobody read is drained); a reset destroys it at
   * once, with an error when the peer reset it for a reason other than CANCEL.
   */
  afterClose(code: number, byPeer: boolean, err?: Error): void {
    this.closed = true;
    this.rstCode = code;
    this.pending = undefined;
    this.finalCb = undefined;
    // CANCEL after the peer's END_STREAM only stops our side (what we still send): the reader keeps what came.
    const whole = code === ErrorCode.NO_ERROR || (code === ErrorCode.CANCEL && this.remoteEnded);
    if (!whole || !this.readable || this.readableEnded) {
      const failed = byPeer && !whole && (code !== ErrorCode.CANCEL || this.cancelFails);
      this.destroy(err ?? (failed ? streamError(code) : undefined));
      return;
    }
    this.once('end', () => this.destroy());
    if (!this.remoteEnded) this.push(null);
    if (this.drainUnread && this.readableFlowing === null) this.resume();
    else this.read(0);
  }

  /** A server drains a request body nobody read once the stream is done; a client keeps the response for its reader. */
  protected readonly drainUnread: boolean = false;
  /**
   * The peer's CANCEL before its END_STREAM is an error: for a client, a response cut short (it would
   * otherwise never end); a server takes it as the caller going away, as node:http2 does.
   */
  protected readonly cancelFails: boolean = false;

  /** The connection went away with the stream open: closed as if cancelled, so its other side is let go of too. */
  sessionGone(_err: Error | undefined): void {
    this.afterClose(ErrorCode.CANCEL, false);
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (!this.closed) {
      // Destroyed by the application while open: the peer is told (CANCEL, or INTERNAL_ERROR for a failure).
      const code = err ? ErrorCode.INTERNAL_ERROR : ErrorCode.CANCEL;
      this.session.resetStream(this, code, false);
    }
    cb(err);
  }

  /** The headers of a message the peer sent on this stream after its first (trailers). */
  onTrailers(headers: H2Headers, flags: number): void {
    this.emit('trailers', headers, flags);
  }
}
