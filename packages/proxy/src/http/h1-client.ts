// The HTTP/1.1 client's wire: one kept-alive connection to an HTTP/1 server (the inbound proxy's app, an
// unmeshed endpoint), the request head written as one string, the response parsed by Node's own llhttp
// binding (`HTTPParser` of `_http_common`, what node:http parses with), the parser fed by libuv straight
// from the socket (`consume`, as Node's HTTP server does) instead of through 'data' events.
//
// Why not node:http's ClientRequest: per request it builds an OutgoingMessage and an IncomingMessage,
// stores the headers twice, and runs the socket's data through a JavaScript 'data' listener. Measured on
// one client process at 1,000 rps (docs/proxy.md, "The HTTP/1 client on llhttp"), 75–85 µs of CPU per
// request with ClientRequest on the proxy's pool against 48–49 µs this way. What node:http did that the
// proxy relies on is kept here and tested against it (h1-client.test.ts): the response's header object by
// Node's rules for duplicates, Host and `Connection: keep-alive` on every request, `Content-Length: 0` on
// a bodiless POST or PUT, chunked framing for a body of unknown length, 1xx answers skipped, HEAD answers
// without a body, a body ended by the server's close, backpressure on the response body, header names
// and values checked before anything is written (ERR_INVALID_HTTP_TOKEN, ERR_INVALID_CHAR), and the
// errors as Node reports them (ECONNRESET "socket hang up" before the head, "aborted" after it; HPE_*
// from the parser), so the keep-alive race and the error catalogue read them as before.
import { connect, type Socket } from 'node:net';
import { Readable, Writable } from 'node:stream';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import {
  INVALID_PATH,
  TOKEN,
  codedError,
  errorIfHeard,
  framingName,
  headerLine,
  headersOf,
  ignore,
  newParser,
  type LlhttpParser,
} from './h1-wire.js';

/** The connection's owner (the endpoint's pool): told when it may be reused and when it is gone. */
export interface ConnectionOwner {
  /** The exchange on `conn` is over and both sides keep the connection (`keepAliveHint`: the server's Keep-Alive header). */
  release(conn: H1Connection, keepAliveHint: string | undefined): void;
  /** `conn` closed. */
  forget(conn: H1Connection): void;
}

/** Where a request's answer goes. */
export interface ResponseSink {
  /** The response head came; its body follows on `res`. */
  onResponse(res: H1Response): void;
  /** The request failed before its response head. */
  onFailure(err: NodeJS.ErrnoException): void;
}

/** A response: its head, and its body as a stream (read it to its end, or the connection is not reused). */
export class H1Response extends Readable {
  constructor(
    readonly statusCode: number,
    readonly headers: IncomingHttpHeaders,
    private readonly conn: H1Connection,
  ) {
    super();
  }

  /** The whole body has been received. */
  complete = false;

  override _read(): void {
    this.conn.readMore();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    // Given up before its end: the rest will not be read, so the connection cannot be reused.
    if (!this.complete) this.conn.abort();
    done(errorIfHeard(this, err));
  }
}

/** The body of a request on its way: chunked when its length is not known. */
class RequestBody extends Writable {
  constructor(
    private readonly conn: H1Connection,
    private readonly chunked: boolean,
  ) {
    super();
    // A body cut off by the connection's end: the failure reaches the call through the connection.
    this.on('error', ignore);
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    const s = this.conn.socket;
    if (!this.chunked) {
      s.write(chunk, done);
      return;
    }
    if (chunk.length === 0) return done(); // an empty chunk would end a chunked body
    s.cork();
    s.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    s.write(chunk);
    s.write('\r\n', 'latin1', done);
    s.uncork();
  }

  override _final(done: (err?: Error | null) => void): void {
    const sent = () => {
      done();
      this.conn.requestSent();
    };
    if (this.chunked) this.conn.socket.write('0\r\n\r\n', 'latin1', sent);
    else sent();
  }
}

// Methods whose requests carry no body by default: Node sends no Content-Length for them when there is
// none (for the others, a bodiless request gets `Content-Length: 0`).
const BODYLESS_BY_DEFAULT = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
/**
 * The request head, as node:http writes it for a keep-alive agent; throws (before anything is sent) on a
 * method, path, header name or value that would not be one line of HTTP.
 */
export function requestHeadOf(
  method: string,
  path: string,
  headers: OutgoingHttpHeaders,
  hostDefault: string,
  bodiless: boolean,
): { head: string; chunked: boolean } {
  if (!TOKEN.test(method))
    throw codedError('ERR_INVALID_HTTP_TOKEN', `Method must be a valid HTTP token ["${method}"]`, TypeError);
  if (INVALID_PATH.test(path))
    throw codedError('ERR_UNESCAPED_CHARACTERS', 'Request path contains unescaped characters', TypeError);
  let head = `${method} ${path} HTTP/1.1\r\n`;
  let host = false;
  let length = false;
  let te = false;
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined) continue;
    if (!TOKEN.test(name))
      throw codedError('ERR_INVALID_HTTP_TOKEN', `Header name must be a valid HTTP token ["${name}"]`, TypeError);
    const lower = framingName(name);
    if (lower === 'host') host = true;
    else if (lower === 'content-length') length = true;
    else if (lower === 'transfer-encoding') te = true;
    if (typeof v === 'object') {
      for (const one of v) head += headerLine(name, one);
    } else head += headerLine(name, typeof v === 'string' ? v : String(v));
  }
  if (!host) head += `Host: ${hostDefault}\r\n`;
  head += 'Connection: keep-alive\r\n';
  let chunked = false;
  if (bodiless) {
    if (!length && !te && !BODYLESS_BY_DEFAULT.has(method)) head += 'Content-Length: 0\r\n';
  } else if (te) chunked = true;
  else if (!length) {
    head += 'Transfer-Encoding: chunked\r\n';
    chunked = true;
  }
  return { head: head + '\r\n', chunked };
}

/** The libuv stream under a socket, where reading is started and stopped (null once closed). */
interface StreamHandle {
  isStreamBase?: boolean;
  reading?: boolean;
  readStart?(): number;
  readStop?(): number;
}
function handleOf(s: Socket): StreamHandle | null {
  return (s as unknown as { _handle: StreamHandle | null })._handle;
}

/** Connect options of every connection: what the Agent was given. */
const CONNECT = { noDelay: true, keepAlive: true, keepAliveInitialDelay: 1000 } as const;

/** One connection to an HTTP/1 server, one request at a time. */
export class H1Connection {
  readonly socket: Socket;
  /** This connection served a request before the one in flight (the keep-alive race is possible). */
  reusedSocket = false;
  /** Until when it may be reused once idle (the pool's). */
  deadline = Infinity;
  private readonly parser: LlhttpParser;
  private sink: ResponseSink | undefined;
  private res: H1Response | undefined;
  /** Headers of a head that came in more than one read. */
  private partial: string[] = [];
  private headRequest = false;
  private requestDone = true;
  private responseDone = true;
  private keepAlive = false;
  private readingStopped = false;
  private consumed = false;
  /** The last response's Keep-Alive header (the server's idle timeout). */
  private keepAliveHint: string | undefined;
  private error: NodeJS.ErrnoException | undefined;
  /** The Host header of a request that has none (as node:http makes it from the address). */
  private readonly hostDefault: string;

  constructor(
    host: string,
    port: number,
    private readonly owner: ConnectionOwner,
  ) {
    this.hostDefault = `${host.includes(':') ? `[${host}]` : host}${port === 80 ? '' : `:${port}`}`;
    const s = connect({ host, port, ...CONNECT });
    this.socket = s;
    this.parser = newParser('response', 0, {
      onHeaders: this.onHeaders,
      onHeadersComplete: this.onHeadersComplete,
      onBody: this.onBody,
      onMessageComplete: this.onMessageComplete,
      onExecute: this.onExecute,
    });
    s.once('connect', this.onConnect);
    s.on('end', this.onEnd);
    s.on('error', this.onError);
    s.once('close', this.onClose);
  }

  get destroyed(): boolean {
    return this.socket.destroyed;
  }

  /**
   * Sends a request (the head at once; the body, when there is one, through the returned stream, which
   * must be ended). Throws, sending nothing, when the head would not be valid HTTP.
   */
  send(
    method: string,
    path: string,
    headers: OutgoingHttpHeaders,
    bodiless: boolean,
    sink: ResponseSink,
  ): Writable | undefined {
    const { head, chunked } = requestHeadOf(method, path, headers, this.hostDefault, bodiless);
    this.sink = sink;
    this.headRequest = method === 'HEAD';
    this.requestDone = bodiless;
    this.responseDone = false;
    this.socket.write(head, 'latin1');
    return bodiless ? undefined : new RequestBody(this, chunked);
  }

  /** Ends the exchange now: the connection is closed (a response not yet complete ends in error). */
  abort(): void {
    this.socket.destroy();
  }

  /** The request's body has been written. */
  requestSent(): void {
    this.requestDone = true;
    if (this.responseDone) this.exchangeOver();
  }

  /** The response body's reader wants more. */
  readMore(): void {
    if (!this.readingStopped) return;
    this.readingStopped = false;
    const h = handleOf(this.socket);
    if (h?.readStart) {
      h.reading = true;
      h.readStart();
    } else this.socket.resume();
  }

  private readonly onConnect = (): void => {
    const h = handleOf(this.socket);
    if (h?.isStreamBase) {
      this.parser.consume(h);
      this.consumed = true;
    } else this.socket.on('data', (d: Buffer) => this.onExecute(this.parser.execute(d)));
  };

  private readonly onExecute = (ret: number | Error | undefined): void => {
    if (ret instanceof Error) this.socket.destroy(ret as NodeJS.ErrnoException);
  };

  private readonly onHeaders = (headers: string[]): void => {
    for (const h of headers) this.partial.push(h);
  };

  private readonly onHeadersComplete = (
    _major: number,
    _minor: number,
    raw: string[] | undefined,
    _method: number | undefined,
    _url: string | undefined,
    status: number,
    _message: string,
    upgrade: boolean,
    shouldKeepAlive: boolean,
  ): number => {
    if (raw === undefined) {
      raw = this.partial;
      this.partial = [];
    }
    const sink = this.sink;
    if (sink === undefined || upgrade) {
      // An answer nobody asked for, or a protocol switch the request did not ask for.
      this.socket.destroy(codedError('HPE_UNEXPECTED_RESPONSE', 'unexpected HTTP/1 response'));
      return 1;
    }
    // 100 Continue, 103 Early Hints, ...: the final answer follows.
    if (status < 200) return 1;
    this.keepAlive = shouldKeepAlive;
    const headers = headersOf(raw);
    this.keepAliveHint = headers['keep-alive'] as string | undefined;
    const res = new H1Response(status, headers, this);
    this.res = res;
    this.sink = undefined;
    sink.onResponse(res);
    return this.headRequest ? 1 : 0;
  };

  private readonly onBody = (chunk: Buffer): void => {
    const res = this.res;
    if (res === undefined || res.destroyed) return;
    if (!res.push(chunk)) this.stopReading();
  };

  private readonly onMessageComplete = (): void => {
    // Trailers come as headers at the end of a chunked body; they are not forwarded (as before).
    if (this.partial.length > 0) this.partial = [];
    const res = this.res;
    if (res === undefined) return; // a skipped 1xx
    this.res = undefined;
    res.complete = true;
    res.push(null);
    this.responseDone = true;
    if (this.requestDone) this.exchangeOver();
  };

  private stopReading(): void {
    const h = handleOf(this.socket);
    this.readingStopped = true;
    if (h?.readStop) {
      h.reading = false;
      h.readStop();
    } else this.socket.pause();
  }

  private exchangeOver(): void {
    if (this.socket.destroyed) return;
    if (!this.keepAlive) {
      this.socket.end();
      return;
    }
    this.readMore();
    this.owner.release(this, this.keepAliveHint);
  }

  private readonly onEnd = (): void => {
    // A body that runs to the connection's end (no length given) is complete now; one cut short is
    // "aborted" when the connection closes (a parse error here is not reported, as node:http does).
    if (this.res !== undefined) this.parser.finish();
  };

  private readonly onError = (err: NodeJS.ErrnoException): void => {
    this.error ??= err;
  };

  private readonly onClose = (): void => {
    if (this.consumed) this.parser.unconsume();
    this.parser.close();
    this.owner.forget(this);
    const sink = this.sink;
    const res = this.res;
    this.sink = undefined;
    this.res = undefined;
    if (sink !== undefined) sink.onFailure(this.error ?? codedError('ECONNRESET', 'socket hang up'));
    else if (res !== undefined && !res.destroyed) res.destroy(this.error ?? codedError('ECONNRESET', 'aborted'));
  };
}
