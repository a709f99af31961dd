// Header fields between the wire and the proxy: a decoded field list ([name, value, ...], as HpackDecoder
// gives it) checked by RFC 9113's rules for a request (8.2, 8.3) and made into the header object
// node:http2 hands out (so the stages above read both engines' requests alike), and a header object the
// proxy answers with made into a field list for HpackEncoder.
import type { IncomingHttpHeaders as H2Headers, OutgoingHttpHeaders } from 'node:http2';

/** Header fields HTTP/2 forbids (RFC 9113 8.2.2): they belong to one HTTP/1 connection. */
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/** What a field list turned into: the headers, or why the message is malformed (a stream error). */
export type Checked = { headers: H2Headers; error?: undefined } | { headers?: undefined; error: string };

/** A value with NUL, CR or LF: what would split or smuggle a header on an HTTP/1 hop. */
function hasForbiddenChar(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 0 || c === 10 || c === 13) return true;
  }
  return false;
}

/** A value with NUL, CR or LF, or with whitespace at either end (RFC 9113 8.2.1). */
function badValue(v: string): boolean {
  if (hasForbiddenChar(v)) return true;
  const first = v.charCodeAt(0);
  const last = v.charCodeAt(v.length - 1);
  return first === 32 || first === 9 || last === 32 || last === 9;
}

/** Adds a regular field by node:http2's rules: set-cookie an array, cookie joined by "; ", others by ", ". */
function addField(h: H2Headers, name: string, value: string): void {
  const old = h[name];
  if (old === undefined) h[name] = name === 'set-cookie' ? [value] : value;
  else if (Array.isArray(old)) old.push(value);
  else h[name] = old + (name === 'cookie' ? '; ' : ', ') + value;
}

/**
 * A request's header fields as an object, or why they are malformed: pseudo-header fields first, each
 * once, only :method :scheme :authority :path; :method always, :scheme and a non-empty :path unless
 * CONNECT (which takes :authority alone); no connection-specific field; te only "trailers".
 */
export function requestHeaders(fields: readonly string[]): Checked {
  const h: H2Headers = Object.create(null) as H2Headers;
  let regular = false;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    if (value.length > 0 && badValue(value)) return { error: `the value of ${name} has a forbidden character` };
    if (name.charCodeAt(0) === 58 /* : */) {
      if (regular) return { error: `pseudo-header ${name} after a regular field` };
      if (name !== ':method' && name !== ':scheme' && name !== ':authority' && name !== ':path')
        return { error: `unknown pseudo-header ${name}` };
      if (h[name] !== undefined) return { error: `pseudo-header ${name} twice` };
      h[name] = value;
      continue;
    }
    regular = true;
    if (CONNECTION_SPECIFIC.has(name)) return { error: `connection-specific field ${name}` };
    if (name === 'te' && value !== 'trailers') return { error: 'te other than "trailers"' };
    addField(h, name, value);
  }
  const method = h[':method'];
  if (method === undefined || method === '') return { error: 'no :method' };
  if (method === 'CONNECT') {
    if (h[':authority'] === undefined || h[':scheme'] !== undefined || h[':path'] !== undefined)
      return { error: 'CONNECT needs :authority and neither :scheme nor :path' };
  } else if (h[':scheme'] === undefined || h[':path'] === undefined || h[':path'] === '') {
    return { error: 'no :scheme or no :path' };
  }
  return { headers: h };
}

/**
 * Trailer fields (or a response's fields after `:status`, from `from`) as an object, or why they are
 * malformed (no pseudo-header, no connection-specific field, RFC 9113 8.1-8.2).
 */
export function trailerHeaders(fields: readonly string[], from = 0): Checked {
  const h: H2Headers = Object.create(null) as H2Headers;
  for (let i = from; i < fields.length; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    if (name.charCodeAt(0) === 58) return { error: `pseudo-header ${name} in trailers` };
    if (CONNECTION_SPECIFIC.has(name)) return { error: `connection-specific field ${name}` };
    if (value.length > 0 && badValue(value)) return { error: `the value of ${name} has a forbidden character` };
    addField(h, name, value);
  }
  return { headers: h };
}

/** The size of a header list as SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113 6.5.2). */
export function headerListSize(fields: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < fields.length; i++) n += fields[i]!.length;
  return n + 16 * fields.length;
}

/** An error a caller made writing headers (what node:http2's respond() throws for the same mistakes). */
export class HeaderError extends TypeError {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'HeaderError';
  }
}

/**
 * A header object to send as a field list, pseudo-header fields first (`:status` for a response).
 * Names are lower-cased; undefined values are skipped; arrays become one field per value. Throws
 * HeaderError for a connection-specific field or a value with CR, LF or NUL (what would split or
 * smuggle a header on an HTTP/1 hop).
 */
export function toFieldList(headers: OutgoingHttpHeaders, trailers = false): string[] {
  const pseudo: string[] = [];
  const regular: string[] = [];
  for (const key in headers) {
    const v = headers[key];
    if (v === undefined) continue;
    const name = hasUpper(key) ? key.toLowerCase() : key;
    const isPseudo = name.charCodeAt(0) === 58;
    if (isPseudo && trailers)
      throw new HeaderError('ERR_HTTP2_INVALID_PSEUDOHEADER', `pseudo-header ${name} in trailers`);
    if (CONNECTION_SPECIFIC.has(name))
      throw new HeaderError('ERR_HTTP2_INVALID_CONNECTION_HEADERS', `HTTP/1 connection-specific header ${name}`);
    const out = isPseudo ? pseudo : regular;
    if (Array.isArray(v)) {
      for (const one of v) out.push(name, checkedValue(name, String(one)));
    } else {
      out.push(name, checkedValue(name, typeof v === 'string' ? v : String(v)));
    }
  }
  if (pseudo.length === 0) return regular;
  for (let i = 0; i < regular.length; i++) pseudo.push(regular[i]!);
  return pseudo;
}

function hasUpper(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}

function checkedValue(name: string, v: string): string {
  if (hasForbiddenChar(v))
    throw new HeaderError('ERR_INVALID_CHAR', `invalid character in the value of header ${name}`);
  return v;
}

let dateSecond = -1;
let dateText = '';

/** The Date header's value for now (RFC 9110 5.6.7), made once a second. */
export function httpDate(): string {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}
