// The client role of the proxy's HTTP/2 engine: a connection on which the proxy opens streams (odd ids,
// in order), one per request to an upstream, answered by a 'response' event as node:http2's client
// stream has it. Streams beyond the peer's SETTINGS_MAX_CONCURRENT_STREAMS wait for a slot instead of
// being refused. A GOAWAY fails the streams the peer says it did not take with REFUSED_STREAM (safe to
// send again elsewhere), and the session takes no more requests.
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { IncomingHttpHeaders as H2Headers, OutgoingHttpHeaders } from 'node:http2';
import { CLIENT_PREFACE, ErrorCode, Flag, FrameError, Setting } from './frames.js';
import { toFieldList, trailerHeaders } from './fields.js';
import { H2Session, type H2SessionOptions } from './session.js';
import { H2Stream, streamError } from './stream.js';

export interface RequestOptions {
  /** The request has no body: HEADERS with END_STREAM. */
  endStream?: boolean;
}

/** A request stream: write the request body, read the response after 'response'. */
export class ClientStream extends H2Stream {
  /** The final response head came. */
  responded = false;
  protected override readonly cancelFails = true;
  /** Writes made before the stream could open (the peer's concurrency limit), run once it opens. */
  private deferred: Array<() => void> | undefined;

  constructor(
    session: H2ClientSession,
    readonly fields: string[],
    private readonly endStream: boolean,
  ) {
    super(session, 0);
  }

  /** Opens it on the wire with id `id`: the request's HEADERS go out. */
  open(id: number): void {
    this.id = id;
    this.sendWindow = this.session.peerInitialWindow;
    this.headersSent = true;
    this.session.sendHeaders(this, this.fields, this.endStream);
    if (this.endStream) this.localEnded = true;
    const d = this.deferred;
    this.deferred = undefined;
    if (d !== undefined) for (const run of d) run();
  }

  protected implicitHead(): void {
    // The request's HEADERS go out when the stream opens; a write before that waits (see _write).
  }

  override _write(chunk: Buffer, enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.id === 0 && !this.closed) {
      (this.deferred ??= []).push(() => super._write(chunk, enc, cb));
      return;
    }
    super._write(chunk, enc, cb);
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (this.id === 0 && !this.closed) {
      (this.deferred ??= []).push(() => super._final(cb));
      return;
    }
    super._final(cb);
  }

  /** The connection went away with the stream open: it fails with `err` (the connection's, if any). */
  override sessionGone(err: Error | undefined): void {
    const e = Object.assign(
      new Error(`The HTTP/2 connection closed before the response ended${err ? `: ${err.message}` : ''}`),
      {
        code: 'ERR_HTTP2_STREAM_CANCEL',
        cause: err,
      },
    );
    this.closed = true;
    this.rstCode = ErrorCode.CANCEL;
    this.destroy(e);
  }

  /** Failed without having been sent, or sent but not taken by the peer (GOAWAY): safe to send again. */
  refuse(): void {
    if (this.closed) return;
    this.closed = true;
    this.rstCode = ErrorCode.REFUSED_STREAM;
    this.destroy(streamError(ErrorCode.REFUSED_STREAM));
  }
}

export interface H2ClientOptions extends H2SessionOptions {
  /** The :authority of requests that give none. */
  authority?: string;
}

/** One client-side connection, over a socket the caller opened (TCP or TLS with ALPN h2). */
export class H2ClientSession extends H2Session {
  /** The socket is still connecting (or its TLS handshaking). */
  connecting: boolean;
  private nextStreamId = 1;
  private readonly waiting: ClientStream[] = [];
  private readonly authority: string;
  private idleTimer: NodeJS.Timeout | undefined;
  private lastActive = Date.now();

  constructor(socket: Socket, opts: H2ClientOptions = {}) {
    super(socket, opts, false);
    this.authority = opts.authority ?? 'localhost';
    this.queue(CLIENT_PREFACE);
    this.sendPreface([[Setting.ENABLE_PUSH, 0]]);
    const tls = typeof (socket as TLSSocket).encrypted === 'boolean';
    this.connecting =
      socket.connecting || (tls && !(socket as TLSSocket & { _secureEstablished?: boolean })._secureEstablished);
    if (this.connecting) {
      socket.once(tls ? 'secureConnect' : 'connect', () => {
        this.connecting = false;
        this.emit('connect', this, socket);
      });
    }
  }

  protected isIdle(streamId: number): boolean {
    return streamId % 2 === 1 ? streamId >= this.nextStreamId : true;
  }

  /** A request: its stream, opened at once unless the peer's concurrency limit makes it wait. */
  request(headers: OutgoingHttpHeaders, opts?: RequestOptions): ClientStream {
    if (this.destroyed)
      throw Object.assign(new Error('The session has been destroyed'), { code: 'ERR_HTTP2_INVALID_SESSION' });
    if (this.closed || this.peerGoaway)
      throw Object.assign(new Error('New streams cannot be created after receiving a GOAWAY'), {
        code: 'ERR_HTTP2_GOAWAY_SESSION',
      });
    const h: OutgoingHttpHeaders = { ...headers };
    h[':method'] ??= 'GET';
    if (h[':method'] !== 'CONNECT') {
      h[':scheme'] ??= 'http';
      h[':path'] ??= '/';
    }
    h[':authority'] ??= this.authority;
    const endStream = opts?.endStream === true;
    const stream = new ClientStream(this, toFieldList(h), endStream);
    if (endStream) stream.end();
    if (this.streams.size < this.peerMaxConcurrentStreams) this.open(stream);
    else this.waiting.push(stream);
    this.touch();
    return stream;
  }

  private open(stream: ClientStream): void {
    const id = this.nextStreamId;
    if (id > 0x7fffffff) return stream.refuse();
    this.nextStreamId += 2;
    this.streams.set(id, stream);
    stream.open(id);
  }

  protected override onSlotsFreed(): void {
    while (this.waiting.length > 0 && this.streams.size < this.peerMaxConcurrentStreams && !this.closed) {
      const s = this.waiting.shift()!;
      if (!s.destroyed) this.open(s);
    }
  }

  protected onNewHeaders(streamId: number): void {
    if (streamId % 2 === 0)
      throw new FrameError('PROTOCOL_ERROR', `HEADERS on stream ${streamId}, which the server cannot open`);
    if (streamId >= this.nextStreamId) throw new FrameError('PROTOCOL_ERROR', `HEADERS on idle stream ${streamId}`);
    // A stream closed or reset here: ignored.
  }

  protected override onStreamHeaders(
    stream: H2Stream,
    flags: number,
    fields: string[],
    malformed: string | undefined,
  ): void {
    const s = stream as ClientStream;
    this.touch();
    if (s.responded) return super.onStreamHeaders(stream, flags, fields, malformed);
    const head = malformed === undefined ? responseHeaders(fields) : undefined;
    if (head === undefined) return this.rejectMalformed(stream);
    const status = head[':status'] as unknown as number;
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if (status < 200) {
      // Informational (1xx): more heads follow; one may not end the stream.
      if (endStream) return this.rejectMalformed(stream);
      s.emit('headers', head, flags);
      return;
    }
    s.responded = true;
    const cl = head['content-length'];
    if (cl !== undefined && /^[0-9]+$/.test(cl)) s.contentLength = Number(cl);
    s.emit('response', head, flags);
    if (endStream && !s.closed) s.onEnd();
  }

  protected override onGoaway(lastStreamId: number, code: number): void {
    this.peerGoaway = true;
    // Streams the peer did not take were not processed: refused, so they may go again elsewhere.
    for (const [id, s] of [...this.streams]) {
      if (id > lastStreamId) {
        this.streams.delete(id);
        (s as ClientStream).refuse();
      }
    }
    for (const s of this.waiting.splice(0)) s.refuse();
    super.onGoaway(lastStreamId, code);
  }

  /** 'timeout' (and `callback`) after `ms` without a frame in or out while no stream is open. */
  setTimeout(ms: number, callback?: () => void): void {
    if (callback) this.on('timeout', callback);
    if (this.idleTimer) clearInterval(this.idleTimer);
    if (ms <= 0) return;
    this.idleTimer = setInterval(
      () => {
        if (this.destroyed) return void clearInterval(this.idleTimer);
        if (this.streams.size === 0 && this.waiting.length === 0 && Date.now() - this.lastActive >= ms)
          this.emit('timeout');
      },
      Math.max(10, ms / 4),
    );
    this.idleTimer.unref();
  }

  private touch(): void {
    this.lastActive = Date.now();
  }

  override receive(chunk: Buffer): void {
    this.lastActive = Date.now();
    super.receive(chunk);
  }

  override destroy(err?: Error): void {
    if (this.idleTimer) clearInterval(this.idleTimer);
    for (const s of this.waiting.splice(0)) s.sessionGone(err);
    super.destroy(err);
  }
}

/**
 * A response's header fields as node:http2's client hands them ('response'): `:status` a number;
 * undefined when malformed (no or a bad :status, another pseudo-header, a connection-specific field).
 */
function responseHeaders(fields: readonly string[]): H2Headers | undefined {
  if (fields[0] !== ':status' || !/^[1-5][0-9][0-9]$/.test(fields[1] ?? '')) return undefined;
  const rest = trailerHeaders(fields, 2);
  if (rest.error !== undefined) return undefined;
  const h = rest.headers;
  (h as Record<string, unknown>)[':status'] = Number(fields[1]);
  return h;
}

/** HTTP/2 over `socket` (prior knowledge, or TLS that agreed on h2). */
export function connectHttp2(socket: Socket, opts?: H2ClientOptions): H2ClientSession {
  return new H2ClientSession(socket, opts);
}
