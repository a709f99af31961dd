// The HTTP/1.1 server's wire: the connections a caller sends HTTP/1 on (the app to its outbound proxy, an
// unmeshed client to an inbound proxy), parsed by Node's own llhttp binding (h1-wire.ts), each request
// handed to the stack as an `H1Request` (its body a Readable) with an `H1Reply` to answer it on.
//
// Why not node:http's Server: per request it builds an IncomingMessage and a ServerResponse (an
// OutgoingMessage with its header store, its socket bookkeeping and its own stream machinery) and emits
// them through the server. What it did that the proxy relies on is kept here and tested against it
// (h1-server.test.ts): keep-alive with the hour's idle timeout, pipelined requests answered in order, the
// header read timeout (408), headers over 16 KiB (431) and what llhttp's strict mode refuses (400) answered
// by the proxy's own respondBadRequest, `Expect: 100-continue` answered at once (and any other
// expectation with 417), an Upgrade handed over with the bytes after its head, HTTP/1.0 callers answered
// with a body ended by the close when its length is not known, HEAD, 204 and 304 without a body, chunked
// framing when the length is not known, `Date`, `Connection` and `Keep-Alive: timeout=N` on every answer.
import { EventEmitter } from 'node:events';
import { STATUS_CODES, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import {
  codedError,
  errorIfHeard,
  framingName,
  headerLine,
  headersOf,
  ignore,
  methods,
  newParser,
  type LlhttpParser,
} from './h1-wire.js';

/** What the server hands its requests to. */
export interface H1ServerHandlers {
  request(req: H1Request, res: H1Reply): void;
  /** An Upgrade (WebSocket) or CONNECT: the connection is the handler's from now on (`head`: bytes after the request head). */
  upgrade(req: H1Request, socket: Socket, head: Buffer): void;
  /** A request that could not be read (a parse error, headers too large or too slow). */
  clientError(err: NodeJS.ErrnoException, socket: Socket, busy: boolean): void;
}

export interface H1ServerOptions {
  /** A request head not complete this long after its first byte gets 408 (the slowloris bound). */
  headersTimeoutMs: number;
  /** An idle kept-alive connection is closed after this long. */
  idleTimeoutMs: number;
  /** The largest request head (node:http's default, 16 KiB). */
  maxHeaderSize?: number;
}

/** A request as the stack reads it: node:http's IncomingMessage fields the proxy uses, the body as a stream. */
export class H1Request extends Readable {
  /** The whole body has been received. */
  complete = false;
  readonly httpVersion: string;

  constructor(
    readonly socket: Socket,
    readonly method: string,
    public url: string,
    readonly headers: IncomingHttpHeaders,
    readonly rawHeaders: string[],
    major: number,
    minor: number,
  ) {
    super();
    this.httpVersion = `${major}.${minor}`;
  }

  override _read(): void {
    if (this.socket.isPaused()) this.socket.resume();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    done(errorIfHeard(this, err));
  }
}

/** The cached Date header value (node:http's utcDate: one string a second). */
let dateValue = '';
let dateUntil = 0;
function utcDate(): string {
  const now = Date.now();
  if (now >= dateUntil) {
    dateValue = new Date(now).toUTCString();
    dateUntil = now - (now % 1000) + 1000;
  }
  return dateValue;
}

/**
 * The answer to one request, written in order after the answers to the requests before it on the same
 * connection. What the proxy calls of node:http's ServerResponse: writeHead, write (false: wait for
 * 'drain'), end, destroy, headersSent, destroyed, writableFinished, and its 'close' event (after the end
 * was written, or when the connection closed before).
 */
export class H1Reply extends EventEmitter {
  headersSent = false;
  destroyed = false;
  writableFinished = false;
  private status = 200;
  private headers: OutgoingHttpHeaders | undefined;
  private headWritten = false;
  private chunked = false;
  private bodyAllowed: boolean;
  private ended = false;
  /** Written before the answers ahead of it were done: sent when its turn comes. */
  queued: Array<string | Buffer> | undefined;
  /** The connection stays open after this answer. */
  keepAlive: boolean;

  constructor(
    private readonly conn: H1ServerConnection,
    headRequest: boolean,
    keepAlive: boolean,
    private readonly http10: boolean,
  ) {
    super();
    this.keepAlive = keepAlive;
    this.bodyAllowed = !headRequest;
  }

  writeHead(status: number, headers?: OutgoingHttpHeaders): this {
    if (this.headersSent)
      throw codedError('ERR_HTTP_HEADERS_SENT', 'Cannot write headers after they are sent to the client');
    this.status = status;
    this.headers = headers;
    this.headersSent = true;
    return this;
  }

  /** An interim `100 Continue` (the caller said `Expect: 100-continue`). */
  writeContinue(): void {
    this.conn.out(this, 'HTTP/1.1 100 Continue\r\n\r\n');
  }

  write(chunk: string | Buffer): boolean {
    if (this.ended || this.destroyed) return false;
    const head = this.headWritten ? '' : this.headNow(undefined, false);
    const length = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    if (!this.bodyAllowed || length === 0) return head === '' ? true : this.conn.out(this, head);
    if (this.chunked) return this.conn.out(this, `${head}${length.toString(16)}\r\n`, chunk, '\r\n');
    return head === '' ? this.conn.out(this, chunk) : this.conn.out(this, head, chunk);
  }

  end(chunk?: string | Buffer | (() => void)): this {
    if (this.ended || this.destroyed) return this;
    const last = typeof chunk === 'function' ? undefined : chunk;
    if (!this.headWritten) {
      const head = this.headNow(last, true);
      if (last !== undefined && this.bodyAllowed) this.conn.out(this, head, last);
      else this.conn.out(this, head);
    } else {
      if (last !== undefined) this.write(last);
      if (this.chunked) this.conn.out(this, '0\r\n\r\n');
    }
    this.ended = true;
    this.conn.ended();
    return this;
  }

  destroy(_err?: Error): this {
    if (!this.destroyed) {
      this.destroyed = true;
      this.conn.socket.destroy();
    }
    return this;
  }

  /** The connection closed, or this answer was written to its end: 'close', once. */
  closed(finished: boolean): void {
    if (this.closeEmitted) return;
    this.closeEmitted = true;
    if (finished) this.writableFinished = true;
    else this.destroyed = true;
    process.nextTick(emitClose, this);
  }
  private closeEmitted = false;

  get isEnded(): boolean {
    return this.ended;
  }

  /** The status line and headers, framed: with `ending` the whole body is `final` (end() before any write). */
  private headNow(final: string | Buffer | undefined, ending: boolean): string {
    this.headWritten = true;
    this.headersSent = true;
    const status = this.status;
    if (status === 204 || status === 304 || (status >= 100 && status < 200)) this.bodyAllowed = false;
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`;
    let length = false;
    let te: string | undefined;
    let date = false;
    const headers = this.headers;
    if (headers !== undefined)
      for (const name in headers) {
        const v = headers[name];
        if (v === undefined) continue;
        const lower = framingName(name);
        if (lower === 'content-length') length = true;
        else if (lower === 'transfer-encoding') te = String(v);
        else if (lower === 'date') date = true;
        else if (lower === 'connection' || lower === 'keep-alive') continue; // the connection's, set below
        if (typeof v === 'object') for (const one of v) head += headerLine(name, one);
        else head += headerLine(name, typeof v === 'string' ? v : String(v));
      }
    if (!date) head += `Date: ${utcDate()}\r\n`;
    // HEAD, 204, 304: no body and no framing of one (the caller's headers go as they are).
    if (this.bodyAllowed) {
      if (te !== undefined) this.chunked = /(?:^|,)\s*chunked\s*$/i.test(te);
      else if (!length) {
        if (ending) {
          const n = final === undefined ? 0 : typeof final === 'string' ? Buffer.byteLength(final) : final.length;
          head += `Content-Length: ${n}\r\n`;
        } else if (this.http10)
          this.keepAlive = false; // no chunked for HTTP/1.0: the close ends the body
        else {
          head += 'Transfer-Encoding: chunked\r\n';
          this.chunked = true;
        }
      }
    }
    if (this.conn.draining) this.keepAlive = false;
    head += this.keepAlive ? this.conn.keepAliveHeaders : 'Connection: close\r\n';
    return `${head}\r\n`;
  }
}

function uncork(s: Socket): void {
  s.uncork();
}

function emitClose(r: H1Reply): void {
  r.emit('close');
}

/** One caller's connection: its requests parsed in turn, their answers written in turn. */
export class H1ServerConnection {
  private readonly parser: LlhttpParser;
  /** Answers not yet written to their end, oldest first: only the first writes to the socket. */
  private readonly replies: H1Reply[] = [];
  private req: H1Request | undefined;
  private partial: string[] = [];
  private partialUrl = '';
  /** A request head has begun and is not complete. */
  private inHead = false;
  private headTimer: NodeJS.Timeout | undefined;
  private upgrading: H1Request | undefined;
  private stopped = false;
  /** Inside parser.execute() (whose callbacks call the request handler). */
  private executing = false;
  /** The caller half-closed: the connection ends once the answers are written. */
  private clientEnded = false;
  /** The connection left this server (an Upgrade). */
  upgraded = false;
  /** When the connection last became idle (no request being read, no answer being written). */
  idleSince = Date.now();
  draining = false;

  constructor(
    readonly socket: Socket,
    private readonly server: H1Server,
    private readonly handlers: H1ServerHandlers,
  ) {
    this.parser = newParser('request', server.maxHeaderSize, {
      onMessageBegin: this.onMessageBegin,
      onHeaders: this.onHeaders,
      onHeadersComplete: this.onHeadersComplete,
      onBody: this.onBody,
      onMessageComplete: this.onMessageComplete,
    });
    socket.setNoDelay(true);
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', ignore);
    socket.on('drain', this.onDrain);
    socket.once('close', this.onClose);
  }

  get keepAliveHeaders(): string {
    return this.server.keepAliveHeaders;
  }

  /** No request is being read and no answer written. */
  get idle(): boolean {
    return this.replies.length === 0 && this.req === undefined && !this.inHead && !this.stopped;
  }

  /** Bytes read from the connection (from detection first). */
  readonly onData = (chunk: Buffer): void => {
    if (this.stopped) return;
    this.executing = true;
    const ret = this.parser.execute(chunk);
    this.executing = false;
    if (this.stopped) this.parser.close(); // stopped from inside a callback (an answer ended the connection)
    if (ret instanceof Error) return this.refuse(ret as NodeJS.ErrnoException);
    const up = this.upgrading;
    if (up !== undefined) {
      this.detach();
      this.handlers.upgrade(up, this.socket, chunk.subarray(ret));
      return;
    }
    if (this.inHead && this.headTimer === undefined)
      this.headTimer = setTimeout(this.onHeadTimeout, this.server.headersTimeoutMs);
  };

  /** Writes for `r` now when it is the oldest answer, or later. */
  out(r: H1Reply, a: string | Buffer, b?: string | Buffer, c?: string | Buffer): boolean {
    if (this.replies[0] !== r) {
      const q = (r.queued ??= []);
      q.push(a);
      if (b !== undefined) q.push(b);
      if (c !== undefined) q.push(c);
      return true;
    }
    const s = this.socket;
    if (s.destroyed) return false;
    // What is written in one tick goes out in one system call (node:http's OutgoingMessage corks the same
    // way): an answer's head, its body and its end when they come together.
    if (!s.writableCorked) {
      s.cork();
      process.nextTick(uncork, s);
    }
    s.write(a);
    if (b !== undefined) s.write(b);
    if (c !== undefined) s.write(c);
    return !s.writableNeedDrain;
  }

  /** An answer has been ended: the finished ones at the front are done, the next one's turn comes. */
  ended(): void {
    const replies = this.replies;
    while (replies.length > 0) {
      const head = replies[0] as H1Reply;
      if (head.queued !== undefined) {
        for (const piece of head.queued) this.socket.write(piece);
        head.queued = undefined;
      }
      if (!head.isEnded) return;
      replies.shift();
      head.closed(true);
      if (!head.keepAlive) {
        this.stop();
        this.socket.end();
        return;
      }
    }
    if (this.clientEnded) this.socket.end();
    else if (this.idle) this.idleSince = Date.now();
  }

  /** Closes the connection if it is idle (a drain, the idle timeout). */
  closeIfIdle(): void {
    if (this.idle) this.socket.destroy();
  }

  private readonly onMessageBegin = (): void => {
    this.inHead = true;
  };

  private readonly onHeaders = (headers: string[], url: string): void => {
    for (const h of headers) this.partial.push(h);
    this.partialUrl += url;
  };

  private readonly onHeadersComplete = (
    major: number,
    minor: number,
    raw: string[] | undefined,
    method: number | undefined,
    url: string | undefined,
    _status: number,
    _message: string,
    upgrade: boolean,
    shouldKeepAlive: boolean,
  ): number => {
    this.inHead = false;
    if (this.headTimer !== undefined) {
      clearTimeout(this.headTimer);
      this.headTimer = undefined;
    }
    if (raw === undefined) {
      raw = this.partial;
      this.partial = [];
    }
    if (!url) {
      url = this.partialUrl;
      this.partialUrl = '';
    }
    const req = new H1Request(
      this.socket,
      (method === undefined ? undefined : methods[method]) ?? 'GET',
      url,
      headersOf(raw),
      raw,
      major,
      minor,
    );
    if (upgrade) {
      this.upgrading = req;
      return 2; // no body: what follows the head is the upgraded protocol's
    }
    const res = new H1Reply(this, req.method === 'HEAD', shouldKeepAlive, major === 1 && minor === 0);
    this.replies.push(res);
    this.req = req;
    const expect = req.headers.expect;
    if (expect !== undefined && major === 1 && minor === 1) {
      if (/(?:^|\W)100-continue(?:$|\W)/i.test(expect)) res.writeContinue();
      else {
        req.resume();
        res.writeHead(417).end();
        return 0;
      }
    }
    this.handlers.request(req, res);
    return 0;
  };

  private readonly onBody = (chunk: Buffer): void => {
    const req = this.req;
    if (req === undefined || req.destroyed) return;
    if (!req.push(chunk)) this.socket.pause();
  };

  private readonly onMessageComplete = (): void => {
    if (this.partial.length > 0) this.partial = []; // trailers
    const req = this.req;
    if (req === undefined) return;
    this.req = undefined;
    req.complete = true;
    req.push(null);
    if (this.replies.length === 0) this.idleSince = Date.now(); // answered before its body ended
  };

  private readonly onHeadTimeout = (): void => {
    this.headTimer = undefined;
    if (!this.inHead || this.stopped) return;
    this.refuse(codedError('ERR_HTTP_REQUEST_TIMEOUT', 'request headers not received in time'));
  };

  private readonly onDrain = (): void => {
    this.replies[0]?.emit('drain');
  };

  private readonly onEnd = (): void => {
    this.clientEnded = true;
    if (!this.stopped) this.parser.finish();
    if (this.replies.length === 0) this.socket.end();
  };

  private readonly onClose = (): void => {
    this.stop();
    this.server.forget(this);
    for (const r of this.replies.splice(0)) r.closed(false);
    const req = this.req;
    this.req = undefined;
    if (req !== undefined && !req.complete && !req.destroyed) req.destroy(codedError('ECONNRESET', 'aborted'));
  };

  private refuse(err: NodeJS.ErrnoException): void {
    const busy = this.replies.length > 0;
    this.stop();
    this.handlers.clientError(err, this.socket, busy);
  }

  /** No more parsing on this connection. */
  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.headTimer !== undefined) clearTimeout(this.headTimer);
    this.headTimer = undefined;
    this.socket.removeListener('data', this.onData);
    // Never while it runs: the request handler is called from inside execute(), and may end the connection.
    if (!this.executing) this.parser.close();
  }

  /** The connection leaves this server (an Upgrade): no listener of ours stays on it. */
  private detach(): void {
    this.stop();
    this.socket.removeListener('end', this.onEnd);
    this.socket.removeListener('error', ignore);
    this.socket.removeListener('drain', this.onDrain);
    this.socket.removeListener('close', this.onClose);
    this.server.forget(this);
    this.upgraded = true;
    // Not flowing until its new owner reads it (as node:http hands over an upgraded socket).
    (this.socket as unknown as { readableFlowing: boolean | null }).readableFlowing = null;
  }
}

/** The server: the connections handed to it, their idle timeout, and what a drain closes. */
export class H1Server {
  readonly headersTimeoutMs: number;
  readonly keepAliveTimeout: number;
  readonly maxHeaderSize: number;
  /** `Connection: keep-alive` and the idle timeout announced (as node:http's server announces it). */
  readonly keepAliveHeaders: string;
  private readonly connections = new Set<H1ServerConnection>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly handlers: H1ServerHandlers,
    opts: H1ServerOptions,
  ) {
    this.headersTimeoutMs = opts.headersTimeoutMs;
    this.keepAliveTimeout = opts.idleTimeoutMs;
    this.maxHeaderSize = opts.maxHeaderSize ?? 16_384;
    this.keepAliveHeaders = `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(opts.idleTimeoutMs / 1000)}\r\n`;
    this.sweeper = setInterval(() => this.sweep(), Math.max(25, Math.min(60_000, Math.floor(opts.idleTimeoutMs / 4))));
    this.sweeper.unref();
  }

  /** Serves a connection; `prefix`: what detection read of it already. */
  serve(socket: Socket, prefix: Buffer | undefined): H1ServerConnection {
    const c = new H1ServerConnection(socket, this, this.handlers);
    this.connections.add(c);
    if (prefix !== undefined && prefix.length > 0) c.onData(prefix);
    if (!c.upgraded && socket.isPaused()) socket.resume();
    return c;
  }

  forget(c: H1ServerConnection): void {
    this.connections.delete(c);
  }

  /** Closes every connection that is idle now (a drain: node:http's closeIdleConnections). */
  closeIdleConnections(): void {
    for (const c of this.connections) {
      c.draining = true;
      c.closeIfIdle();
    }
  }

  /** Closes the connections idle past the idle timeout. */
  sweep(now = Date.now()): void {
    for (const c of this.connections) if (c.idle && now - c.idleSince >= this.keepAliveTimeout) c.closeIfIdle();
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}
