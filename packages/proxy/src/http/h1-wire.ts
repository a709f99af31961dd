// HTTP/1 on the wire, what the proxy's HTTP/1 client (h1-client.ts) and server (h1-server.ts) share:
// Node's own parser, llhttp, as node:http uses it (`HTTPParser` of `_http_common`); the header object
// node:http builds from what it parses, by the same rules; header lines checked as node:http checks them
// before anything is written.
import { createRequire } from 'node:module';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';

/** The part of Node's llhttp binding used here. */
export interface LlhttpParser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  execute(data: Buffer): number | Error;
  finish(): number | Error | undefined;
  consume(handle: unknown): void;
  unconsume(): void;
  close(): void;
  [callback: number]: unknown;
}
interface LlhttpBinding {
  readonly REQUEST: number;
  new (): LlhttpParser;
  readonly RESPONSE: number;
  readonly kOnMessageBegin: number;
  readonly kOnHeaders: number;
  readonly kOnHeadersComplete: number;
  readonly kOnBody: number;
  readonly kOnMessageComplete: number;
  readonly kOnExecute: number;
}
const { HTTPParser, methods: llhttpMethods } = createRequire(import.meta.url)('_http_common') as {
  HTTPParser: LlhttpBinding;
  methods: readonly string[];
};
/** Method names by llhttp's method number. */
export const methods = llhttpMethods;

/** What llhttp calls back with (Node's binding's callbacks, in the binding's argument order). */
export interface ParserCallbacks {
  onMessageBegin?: () => void;
  /** Part of a head that came in more than one read, or a chunked body's trailers. */
  onHeaders: (headers: string[], url: string) => void;
  /** 1: no body follows (HEAD, 1xx); 2: an Upgrade, stop here; 0: go on. */
  onHeadersComplete: (
    major: number,
    minor: number,
    raw: string[] | undefined,
    method: number | undefined,
    url: string | undefined,
    status: number,
    message: string,
    upgrade: boolean,
    shouldKeepAlive: boolean,
  ) => number;
  onBody: (chunk: Buffer) => void;
  onMessageComplete: () => void;
  /** The result of a read the parser consumed by itself (`consume`). */
  onExecute?: (ret: number | Error | undefined) => void;
}

/** A parser of requests or responses, calling `cb` back (strict: no lenient flags, as node:http by default). */
export function newParser(type: 'request' | 'response', maxHeaderSize: number, cb: ParserCallbacks): LlhttpParser {
  const p = new HTTPParser();
  p.initialize(type === 'request' ? HTTPParser.REQUEST : HTTPParser.RESPONSE, {}, maxHeaderSize, 0);
  if (cb.onMessageBegin) p[HTTPParser.kOnMessageBegin] = cb.onMessageBegin;
  p[HTTPParser.kOnHeaders] = cb.onHeaders;
  p[HTTPParser.kOnHeadersComplete] = cb.onHeadersComplete;
  p[HTTPParser.kOnBody] = cb.onBody;
  p[HTTPParser.kOnMessageComplete] = cb.onMessageComplete;
  if (cb.onExecute) p[HTTPParser.kOnExecute] = cb.onExecute;
  return p;
}

// Headers whose repeats Node drops (IncomingMessage's matchKnownFields, requests and responses alike): the
// first one counts.
const SINGLE = new Set([
  'content-type',
  'content-length',
  'user-agent',
  'referer',
  'host',
  'authorization',
  'proxy-authorization',
  'if-modified-since',
  'if-unmodified-since',
  'from',
  'location',
  'max-forwards',
  'retry-after',
  'etag',
  'last-modified',
  'server',
  'age',
  'expires',
]);

/** Raw `[name, value, ...]` → the header object node:http gives (lower-case names, repeats joined). */
export function headersOf(raw: readonly string[]): IncomingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const value = raw[i + 1] as string;
    const had = out[name];
    if (had === undefined) out[name] = name === 'set-cookie' ? [value] : value;
    else if (name === 'set-cookie') (had as string[]).push(value);
    else if (SINGLE.has(name)) continue;
    else out[name] = `${had as string}${name === 'cookie' ? '; ' : ', '}${value}`;
  }
  return out as IncomingHttpHeaders;
}

// What node:http checks (checkIsHttpToken, checkInvalidHeaderChar, INVALID_PATH_REGEX).
export const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
export const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
export const INVALID_PATH = /[^\u0021-\u00ff]/;

/** An error with Node's `code` (what the keep-alive race, respondBadRequest and the catalogue read). */
export function codedError(code: string, message: string, type: ErrorConstructor = Error): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new type(message);
  err.code = code;
  return err;
}

/** A listener for an error that reaches its owner another way (the connection's close). */
export function ignore(): void {}

/** What a body stream's _destroy passes on, as node:http's IncomingMessage: an error only to a listener. */
export function errorIfHeard(stream: NodeJS.EventEmitter, err: Error | null): Error | null {
  return stream.listenerCount('error') === 0 ? null : err;
}

/**
 * A header name in lower case when it can be one that frames a message or its connection (host, date,
 * connection, keep-alive, content-length, transfer-encoding: 4, 10, 14 or 17 letters), else ''. Every
 * header of every message passes here: the others are not lowered at all.
 */
export function framingName(name: string): string {
  const n = name.length;
  return n === 4 || n === 10 || n === 14 || n === 17 ? name.toLowerCase() : '';
}

/** One header line; throws (ERR_INVALID_CHAR) on a value that would not stay one line. */
export function headerLine(name: string, value: string): string {
  if (INVALID_VALUE.test(value))
    throw codedError('ERR_INVALID_CHAR', `Invalid character in header content ["${name}"]`, TypeError);
  return `${name}: ${value}\r\n`;
}

/**
 * An HTTP/1 request as the stack reads it, whichever server parsed it: the proxy's own (h1-server.ts) or
 * node:http's (IncomingMessage: the tests' servers, the admin server). The body is the stream itself.
 */
export type H1Incoming = Readable & {
  readonly method?: string | undefined;
  url?: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly httpVersion: string;
  readonly socket: { readonly remoteAddress?: string | undefined; readonly remotePort?: number | undefined };
};

/** The answer to an HTTP/1 request, as the stack writes it: the proxy's H1Reply or node:http's ServerResponse. */
export interface H1Answer {
  readonly headersSent: boolean;
  readonly destroyed: boolean;
  readonly writableFinished: boolean;
  writeHead(status: number, headers?: OutgoingHttpHeaders): { end(chunk?: string | Buffer): unknown };
  write(chunk: string | Buffer): boolean;
  end(chunk?: string | Buffer): unknown;
  destroy(err?: Error): unknown;
  on(event: 'close', listener: () => void): unknown;
  once(event: 'close' | 'drain', listener: () => void): unknown;
}
