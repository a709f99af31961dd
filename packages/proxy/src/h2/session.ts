// One HTTP/2 connection (RFC 9113): frames in through FrameReader, header blocks through one HPACK
// decoder, frames out through one HPACK encoder, coalesced into one socket write per turn of the event
// loop. It keeps the connection's state (settings both ways, both flow-control windows, the streams,
// GOAWAY) and answers what the protocol answers by itself (SETTINGS and PING acks, WINDOW_UPDATE);
// what a new stream means is the role's (server.ts). Connection errors end it with GOAWAY and the code;
// stream errors reset one stream.
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import {
  ErrorCode,
  Flag,
  FRAME_HEADER_LENGTH,
  FrameError,
  FrameReader,
  FrameType,
  Setting,
  frame,
  goawayFrame,
  headersFrames,
  parseSettings,
  pingFrame,
  rstStreamFrame,
  settingsAckFrame,
  settingsFrame,
  windowUpdateFrame,
  writeFrameHeader,
  type Frame,
} from './frames.js';
import { HpackDecoder, HpackEncoder, HpackError } from './hpack.js';
import { streamError, type H2Stream } from './stream.js';
import { trailerHeaders } from './fields.js';

const MAX_WINDOW = 2 ** 31 - 1;
const DEFAULT_WINDOW = 65_535;

export interface H2SessionOptions {
  /** SETTINGS_INITIAL_WINDOW_SIZE we advertise: each stream's receive window (default 1 MiB). */
  streamWindow?: number;
  /** The connection's receive window (default 16 MiB). */
  connectionWindow?: number;
  /** SETTINGS_MAX_CONCURRENT_STREAMS we advertise (default 10,000). */
  maxConcurrentStreams?: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE we advertise and enforce (default 64 KiB). */
  maxHeaderListSize?: number;
  /** Streams the peer may reset in a burst, refilled at a tenth of that per second (default 1,000). */
  resetBurst?: number;
  /** Bytes queued to a socket the peer does not read past which the connection is dropped (default 16 MiB). */
  maxQueuedBytes?: number;
}

export abstract class H2Session extends EventEmitter {
  readonly streams = new Map<number, H2Stream>();
  /** Our settings. */
  readonly streamWindow: number;
  readonly maxConcurrentStreams: number;
  readonly maxHeaderListSize: number;
  /** Give a stream's window back once this much was read (half the window). */
  readonly windowUpdateThreshold: number;
  /** The peer's settings. */
  peerInitialWindow = DEFAULT_WINDOW;
  peerMaxFrameSize = 16_384;
  peerMaxConcurrentStreams = Infinity;
  /** How much DATA the peer lets us send on the connection. */
  connSendWindow = DEFAULT_WINDOW;
  /** The highest stream id the peer opened (the last-stream-id of our GOAWAY). */
  lastPeerStreamId = 0;
  /** close() was called or GOAWAY sent: no new stream is taken. */
  closed = false;
  destroyed = false;
  /** The peer sent GOAWAY. */
  peerGoaway = false;

  protected readonly decoder = new HpackDecoder();
  protected readonly encoder = new HpackEncoder();
  private readonly reader: FrameReader;
  private readonly connectionWindow: number;
  private connUnacked = 0;
  /** The first frame must be SETTINGS (RFC 9113 3.4). */
  private settingsSeen = false;
  /** The peer acknowledged our SETTINGS: our stream window is in force (before, the default may be). */
  private settingsAcked = false;
  /** A header block continued in CONTINUATION frames. */
  private continued: { streamId: number; flags: number; parts: Buffer[]; length: number } | undefined;
  /** Frames waiting for the end of this turn, and whether a flush is queued. */
  private out: Buffer[] = [];
  private outBytes = 0;
  private flushQueued = false;
  private reading = false;
  /** The last DATA frame queued (its END_STREAM may still be set), until the flush. */
  private lastData: { stream: H2Stream; head: Buffer; payload: Buffer } | undefined;
  /** Write callbacks held until the socket drains. */
  private drainWaiters: Array<() => void> = [];
  /** Streams with DATA waiting for window. */
  private readonly blocked = new Set<H2Stream>();
  private resetTokens: number;
  private resetRefilled = Date.now();
  private readonly resetBurst: number;
  /** A peer that asks for answers (PING, SETTINGS) and does not read them is a flood past this. */
  private readonly maxQueuedBytes: number;
  /** The server role (the client preface comes first; the peer opens the streams). */
  private readonly isServer: boolean;

  constructor(
    readonly socket: Socket,
    opts: H2SessionOptions,
    /** A server's reader expects the client preface first. */
    expectPreface: boolean,
  ) {
    super();
    this.streamWindow = opts.streamWindow ?? 1 << 20;
    this.connectionWindow = opts.connectionWindow ?? 16 << 20;
    this.maxConcurrentStreams = opts.maxConcurrentStreams ?? 10_000;
    this.maxHeaderListSize = opts.maxHeaderListSize ?? 64 << 10;
    this.windowUpdateThreshold = this.streamWindow >> 1;
    this.resetBurst = this.resetTokens = opts.resetBurst ?? 1_000;
    this.maxQueuedBytes = opts.maxQueuedBytes ?? 16 << 20;
    this.isServer = expectPreface;
    this.reader = new FrameReader((f) => this.onFrame(f), { preface: expectPreface });
    // Frames are coalesced per turn already: Nagle would only hold the last one back (node:http2 does the same).
    socket.setNoDelay?.(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('drain', () => this.onDrain());
    socket.on('end', () => this.end());
    socket.on('error', (err: Error) => this.destroy(err));
    socket.on('close', () => this.destroy());
  }

  /**
   * How much DATA the peer may send on one stream before we give some back: our advertised window, or
   * the protocol's default while the peer has not acknowledged a smaller one of ours (RFC 9113 6.9.2).
   */
  get streamRecvWindow(): number {
    return this.settingsAcked ? this.streamWindow : Math.max(this.streamWindow, DEFAULT_WINDOW);
  }

  /** Our SETTINGS and the connection window beyond the default: the first frames we send. */
  protected sendPreface(extra: ReadonlyArray<readonly [number, number]> = []): void {
    this.queue(
      settingsFrame([
        ...extra,
        [Setting.MAX_CONCURRENT_STREAMS, this.maxConcurrentStreams],
        [Setting.INITIAL_WINDOW_SIZE, this.streamWindow],
        [Setting.MAX_HEADER_LIST_SIZE, this.maxHeaderListSize],
      ]),
    );
    if (this.connectionWindow > DEFAULT_WINDOW)
      this.queue(windowUpdateFrame(0, this.connectionWindow - DEFAULT_WINDOW));
  }

  // ---- input

  /** Bytes of the connection (from the socket, or read before it was handed over). */
  receive(chunk: Buffer): void {
    if (this.destroyed) return;
    this.reading = true;
    try {
      this.reader.push(chunk);
    } catch (err) {
      this.connectionError(err);
    } finally {
      this.reading = false;
      this.flush();
    }
  }

  private onFrame(f: Frame): void {
    if (!this.settingsSeen) {
      if (f.type !== FrameType.SETTINGS || f.flags & Flag.ACK)
        throw new FrameError('PROTOCOL_ERROR', 'the connection preface must be followed by SETTINGS');
      this.settingsSeen = true;
    }
    if (this.continued !== undefined && (f.type !== FrameType.CONTINUATION || f.streamId !== this.continued.streamId))
      throw new FrameError('PROTOCOL_ERROR', 'a header block interrupted before END_HEADERS');
    switch (f.type) {
      case FrameType.DATA:
        return this.onDataFrame(f);
      case FrameType.HEADERS:
        return this.onHeadersFrame(f);
      case FrameType.CONTINUATION:
        return this.onContinuation(f);
      case FrameType.SETTINGS:
        return this.onSettings(f);
      case FrameType.WINDOW_UPDATE:
        return this.onWindowUpdate(f);
      case FrameType.RST_STREAM:
        return this.onRstStream(f);
      case FrameType.PING:
        if (f.streamId !== 0) throw new FrameError('PROTOCOL_ERROR', 'PING on a stream');
        if (!(f.flags & Flag.ACK)) this.queue(pingFrame(f.payload, true));
        return;
      case FrameType.GOAWAY:
        if (f.streamId !== 0) throw new FrameError('PROTOCOL_ERROR', 'GOAWAY on a stream');
        return this.onGoaway(f.payload.readUInt32BE(0) & 0x7fffffff, f.payload.readUInt32BE(4));
      case FrameType.PRIORITY:
        if (f.streamId === 0) throw new FrameError('PROTOCOL_ERROR', 'PRIORITY on stream 0');
        if (f.length !== 5) this.queue(rstStreamFrame(f.streamId, ErrorCode.FRAME_SIZE_ERROR));
        return;
      case FrameType.PUSH_PROMISE:
        throw new FrameError('PROTOCOL_ERROR', 'PUSH_PROMISE, which this endpoint disabled');
      default:
        return; // unknown frame types are ignored (RFC 9113 4.1)
    }
  }

  private onHeadersFrame(f: Frame): void {
    if (f.streamId === 0) throw new FrameError('PROTOCOL_ERROR', 'HEADERS on stream 0');
    if (f.flags & Flag.END_HEADERS) return this.onHeaderBlock(f.streamId, f.flags, f.payload);
    this.continued = { streamId: f.streamId, flags: f.flags, parts: [Buffer.from(f.payload)], length: f.length };
  }

  private onContinuation(f: Frame): void {
    const c = this.continued;
    if (c === undefined) throw new FrameError('PROTOCOL_ERROR', 'CONTINUATION without HEADERS');
    c.parts.push(Buffer.from(f.payload));
    c.length += f.payload.length;
    // A header block larger than twice the list we take is a flood (CVE-2024-27316), not a request.
    if (c.length > 2 * this.maxHeaderListSize)
      throw new FrameError('ENHANCE_YOUR_CALM', `a header block over ${2 * this.maxHeaderListSize} octets`);
    if (f.flags & Flag.END_HEADERS) {
      this.continued = undefined;
      this.onHeaderBlock(c.streamId, c.flags, Buffer.concat(c.parts, c.length));
    }
  }

  /** A whole header block: decoded (always, to keep HPACK in step), then the role's. */
  private onHeaderBlock(streamId: number, flags: number, block: Buffer): void {
    let fields: string[];
    let malformed: string | undefined;
    try {
      fields = this.decoder.decode(block);
    } catch (err) {
      if (!(err instanceof HpackError) || err.code !== 'PROTOCOL_ERROR') throw err;
      fields = [];
      malformed = err.message;
    }
    const stream = this.streams.get(streamId);
    if (stream !== undefined) return this.onStreamHeaders(stream, flags, fields, malformed);
    this.onNewHeaders(streamId, flags, fields, malformed);
  }

  /** HEADERS on an open stream: a server's are trailers, which must end it (a client's may be the response). */
  protected onStreamHeaders(stream: H2Stream, flags: number, fields: string[], malformed: string | undefined): void {
    if (stream.remoteEnded) return this.resetStream(stream, ErrorCode.STREAM_CLOSED);
    if (!(flags & Flag.END_STREAM) || malformed !== undefined)
      return this.resetStream(stream, ErrorCode.PROTOCOL_ERROR);
    this.onStreamTrailers(stream, fields, flags);
  }

  /** Streams closed or the peer's limit rose: a client opens what waited. */
  protected onSlotsFreed(): void {}

  /** HEADERS for a stream not open here (a new one for a server). */
  protected abstract onNewHeaders(
    streamId: number,
    flags: number,
    fields: string[],
    malformed: string | undefined,
  ): void;
  /** Trailers on an open stream: checked (no pseudo-header, no connection-specific field), then they end it. */
  protected onStreamTrailers(stream: H2Stream, fields: string[], flags: number): void {
    const checked = trailerHeaders(fields);
    if (checked.error !== undefined) return this.rejectMalformed(stream);
    stream.onTrailers(checked.headers, flags);
    if (!stream.closed) stream.onEnd();
  }

  /**
   * A malformed message from the peer on `stream` (RFC 9113 8.1.1): RST_STREAM PROTOCOL_ERROR. A client's
   * stream fails with it (its response is unusable); a server's request stream is dropped silently, its
   * caller having been told.
   */
  protected rejectMalformed(stream: H2Stream): void {
    this.resetStream(
      stream,
      ErrorCode.PROTOCOL_ERROR,
      true,
      this.isServer ? undefined : streamError(ErrorCode.PROTOCOL_ERROR),
    );
  }

  private onDataFrame(f: Frame): void {
    if (f.streamId === 0) throw new FrameError('PROTOCOL_ERROR', 'DATA on stream 0');
    // The connection's window counts every DATA frame, padding included, whatever its stream.
    this.connUnacked += f.length;
    if (this.connUnacked > this.connectionWindow)
      throw new FrameError('FLOW_CONTROL_ERROR', 'DATA beyond the connection window');
    if (this.connUnacked >= this.connectionWindow >> 1) {
      this.queue(windowUpdateFrame(0, this.connUnacked));
      this.connUnacked = 0;
    }
    const stream = this.streams.get(f.streamId);
    if (stream === undefined) {
      if (this.isIdle(f.streamId)) throw new FrameError('PROTOCOL_ERROR', `DATA on idle stream ${f.streamId}`);
      return; // a stream closed or reset here: frames in flight are ignored (RFC 9113 5.1)
    }
    if (stream.remoteEnded) return this.resetStream(stream, ErrorCode.STREAM_CLOSED);
    stream.onData(f.payload, f.length);
    if (f.flags & Flag.END_STREAM && !stream.closed) stream.onEnd();
  }

  private onSettings(f: Frame): void {
    if (f.streamId !== 0) throw new FrameError('PROTOCOL_ERROR', 'SETTINGS on a stream');
    if (f.flags & Flag.ACK) {
      this.settingsAcked = true;
      return;
    }
    for (const [id, value] of parseSettings(f.payload)) {
      switch (id) {
        case Setting.HEADER_TABLE_SIZE:
          this.encoder.setMaxTableSize(Math.min(value, 4096));
          break;
        case Setting.ENABLE_PUSH:
          if (value > 1) throw new FrameError('PROTOCOL_ERROR', `SETTINGS_ENABLE_PUSH ${value}`);
          break;
        case Setting.MAX_CONCURRENT_STREAMS:
          this.peerMaxConcurrentStreams = value;
          this.onSlotsFreed();
          break;
        case Setting.INITIAL_WINDOW_SIZE: {
          if (value > MAX_WINDOW) throw new FrameError('FLOW_CONTROL_ERROR', `SETTINGS_INITIAL_WINDOW_SIZE ${value}`);
          const delta = value - this.peerInitialWindow;
          this.peerInitialWindow = value;
          for (const s of this.streams.values()) {
            s.sendWindow += delta;
            if (s.sendWindow > MAX_WINDOW) throw new FrameError('FLOW_CONTROL_ERROR', 'a stream window above 2^31-1');
          }
          break;
        }
        case Setting.MAX_FRAME_SIZE:
          if (value < 16_384 || value > 16_777_215)
            throw new FrameError('PROTOCOL_ERROR', `SETTINGS_MAX_FRAME_SIZE ${value}`);
          this.peerMaxFrameSize = value;
          break;
        default:
          break; // MAX_HEADER_LIST_SIZE is advisory; unknown settings are ignored
      }
    }
    this.queue(settingsAckFrame());
    this.retryBlocked();
  }

  private onWindowUpdate(f: Frame): void {
    const inc = f.payload.readUInt32BE(0) & 0x7fffffff;
    if (f.streamId === 0) {
      if (inc === 0) throw new FrameError('PROTOCOL_ERROR', 'WINDOW_UPDATE of 0 on the connection');
      this.connSendWindow += inc;
      if (this.connSendWindow > MAX_WINDOW)
        throw new FrameError('FLOW_CONTROL_ERROR', 'connection window above 2^31-1');
      return this.retryBlocked();
    }
    const stream = this.streams.get(f.streamId);
    if (stream === undefined) {
      if (this.isIdle(f.streamId)) throw new FrameError('PROTOCOL_ERROR', `WINDOW_UPDATE on idle stream ${f.streamId}`);
      return;
    }
    if (inc === 0) return this.resetStream(stream, ErrorCode.PROTOCOL_ERROR);
    stream.sendWindow += inc;
    if (stream.sendWindow > MAX_WINDOW) return this.resetStream(stream, ErrorCode.FLOW_CONTROL_ERROR);
    this.retryBlocked();
  }

  private onRstStream(f: Frame): void {
    if (f.streamId === 0 || this.isIdle(f.streamId))
      throw new FrameError('PROTOCOL_ERROR', `RST_STREAM on idle stream ${f.streamId}`);
    const stream = this.streams.get(f.streamId);
    if (stream === undefined) return;
    // Streams opened and reset at once cost a server work for nothing (CVE-2023-44487): a bucket.
    if (this.isServer) {
      const now = Date.now();
      this.resetTokens = Math.min(
        this.resetBurst,
        this.resetTokens + ((now - this.resetRefilled) * this.resetBurst) / 10_000,
      );
      this.resetRefilled = now;
      if (--this.resetTokens < 0) throw new FrameError('ENHANCE_YOUR_CALM', 'too many streams reset by the peer');
    }
    const code = f.payload.readUInt32BE(0);
    this.forget(stream, code);
    stream.afterClose(code, true);
  }

  protected onGoaway(lastStreamId: number, code: number): void {
    this.peerGoaway = true;
    this.emit('goaway', code, lastStreamId);
    if (this.streams.size === 0) this.end();
  }

  /** A stream id the peer could still open, or we have not opened: no frame but HEADERS may name it. */
  protected abstract isIdle(streamId: number): boolean;

  // ---- output

  /**
   * Queues frame bytes for this turn's write: at the end of the socket read that made them, else once
   * the I/O callbacks of this turn of the event loop have run (setImmediate), so a response's HEADERS,
   * DATA and END_STREAM, made in a chain of callbacks and ticks, leave in one write (one TLS record).
   */
  queue(bytes: Buffer): void {
    this.out.push(bytes);
    this.outBytes += bytes.length;
    if (!this.reading && !this.flushQueued) {
      this.flushQueued = true;
      setImmediate(flushLater, this);
    }
  }

  flush(): void {
    this.flushQueued = false;
    this.lastData = undefined;
    if (this.outBytes === 0) return;
    const out = this.out;
    const bytes = this.outBytes;
    this.out = [];
    this.outBytes = 0;
    const s = this.socket;
    if (s.destroyed || !s.writable) return;
    s.write(out.length === 1 ? out[0]! : Buffer.concat(out, bytes));
    if (s.writableLength > this.maxQueuedBytes) {
      this.destroy(new FrameError('ENHANCE_YOUR_CALM', 'the peer does not read what it asks for'));
    }
  }

  /** Calls `cb` now if the socket takes more, else once it drained (a write's backpressure). */
  private afterSent(cb: () => void): void {
    if (this.socket.writableNeedDrain || this.outBytes > 1 << 20) this.drainWaiters.push(cb);
    else cb();
  }

  private onDrain(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const cb of waiters) cb();
  }

  /** A header block as HEADERS (+ CONTINUATION) frames. */
  sendHeaders(stream: H2Stream, fields: string[], endStream: boolean): void {
    const block = this.encoder.encode(fields);
    this.queue(headersFrames(stream.id, block, endStream, this.peerMaxFrameSize));
  }

  /** END_STREAM: on the stream's last DATA frame if it is still queued, else an empty DATA frame. */
  sendEndStream(stream: H2Stream): void {
    const last = this.lastData;
    if (last !== undefined && last.stream === stream && this.out[this.out.length - 1] === last.payload) {
      last.head[4] = last.head[4]! | Flag.END_STREAM;
      this.lastData = undefined;
      return;
    }
    this.queue(frame(FrameType.DATA, Flag.END_STREAM, stream.id));
  }

  /** DATA from `chunk[off..]` within both windows; what does not fit waits for WINDOW_UPDATE. */
  sendData(stream: H2Stream, chunk: Buffer, off: number, cb: (err?: Error | null) => void): void {
    while (off < chunk.length) {
      const n = Math.min(chunk.length - off, this.connSendWindow, stream.sendWindow, this.peerMaxFrameSize);
      if (n <= 0) {
        stream.pending = { chunk, off, cb };
        this.blocked.add(stream);
        return;
      }
      const head = Buffer.allocUnsafe(FRAME_HEADER_LENGTH);
      writeFrameHeader(head, 0, n, FrameType.DATA, 0, stream.id);
      const payload = off === 0 && n === chunk.length ? chunk : chunk.subarray(off, off + n);
      this.queue(head);
      this.queue(payload);
      this.lastData = { stream, head, payload };
      this.connSendWindow -= n;
      stream.sendWindow -= n;
      off += n;
    }
    this.afterSent(cb);
  }

  private retryBlocked(): void {
    if (this.blocked.size === 0 || this.connSendWindow <= 0) return;
    const waiting = [...this.blocked];
    this.blocked.clear();
    for (const s of waiting) {
      if (this.connSendWindow <= 0) {
        if (s.pending !== undefined) this.blocked.add(s);
        continue;
      }
      const p = s.pending;
      if (p === undefined || s.closed) continue;
      s.pending = undefined;
      this.sendData(s, p.chunk, p.off, p.cb);
      if (s.pending === undefined) s.unblocked();
    }
  }

  streamWindowUpdate(streamId: number, n: number): void {
    this.queue(windowUpdateFrame(streamId, n));
  }

  /**
   * Resets `stream` with `code` (RST_STREAM); `notify`: close it here too (false: it is being destroyed),
   * with `err` if the application is to see one.
   */
  resetStream(stream: H2Stream, code: number, notify = true, err?: Error): void {
    if (stream.closed) return;
    this.queue(rstStreamFrame(stream.id, code));
    stream.localEnded = true;
    this.forget(stream, code);
    if (notify) stream.afterClose(code, false, err);
    else {
      stream.closed = true;
      stream.rstCode = code;
    }
  }

  /** The stream is closed on the wire: no longer tracked; a closing connection ends with its last stream. */
  forget(stream: H2Stream, _code: number): void {
    this.streams.delete(stream.id);
    this.blocked.delete(stream);
    if (this.streams.size === 0 && (this.closed || this.peerGoaway)) this.end();
    else this.onSlotsFreed();
  }

  // ---- the connection's end

  /** Graceful: GOAWAY naming the last stream taken; the connection ends once its streams are done. */
  close(callback?: () => void): void {
    if (callback) this.once('close', callback);
    if (this.closed || this.destroyed) return;
    this.closed = true;
    this.queue(goawayFrame(this.lastPeerStreamId, ErrorCode.NO_ERROR));
    this.flush();
    if (this.streams.size === 0) this.end();
  }

  /** A connection error: GOAWAY with its code and message, then the connection ends. */
  private connectionError(err: unknown): void {
    const code =
      err instanceof FrameError
        ? err.code
        : err instanceof HpackError
          ? ErrorCode.COMPRESSION_ERROR
          : ErrorCode.INTERNAL_ERROR;
    const message = err instanceof Error ? err.message : String(err);
    if (!this.destroyed && !this.socket.destroyed) {
      this.queue(goawayFrame(this.lastPeerStreamId, code, Buffer.from(message.slice(0, 256), 'latin1')));
      this.flush();
    }
    this.closed = true;
    if (this.listenerCount('error') > 0) this.emit('error', err instanceof Error ? err : new Error(message));
    this.end();
  }

  /** Our side of the socket ends (after what is queued); it is destroyed if the peer does not close it. */
  private end(): void {
    if (this.destroyed) return;
    this.flush();
    if (!this.socket.writableEnded) this.socket.end();
    setTimeout(() => this.destroy(), 1_000).unref();
  }

  destroy(err?: Error): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.closed = true;
    this.out = [];
    this.outBytes = 0;
    this.drainWaiters = [];
    if (!this.socket.destroyed) this.socket.destroy();
    for (const s of [...this.streams.values()]) {
      this.streams.delete(s.id);
      s.sessionGone(err);
    }
    this.blocked.clear();
    if (err !== undefined && this.listenerCount('error') > 0) this.emit('error', err);
    this.emit('close');
  }
}

function flushLater(s: H2Session): void {
  s.flush();
}
