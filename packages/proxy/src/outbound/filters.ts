// Outbound route filters (the Gateway API's HTTPRoute and GRPCRoute filters, as the policy controller
// sends them): what the route stage (route.ts) and the backend stage (backend.ts) do to a request whose
// rule or backend has filters. Pure functions over a small view of the request, so that each is tested
// on its own (filters.test.ts):
//   requestHeaders   add (appended to a present value, comma-joined), set, remove
//   responseHeaders  the same on the response head, just before it is written to the caller
//   redirect         answered here: Location from the request's scheme/host/port/path with the
//                    filter's replacements; the port is left out when it is the scheme's well-known one
//   rewrite          the Host (:authority) and/or the path (whole, or the part the rule's prefix matched)
//                    replaced before the request goes on
//   mirror           a copy goes to another backend (route.ts sends it, fire-and-forget)
import type { OutgoingHttpHeaders } from 'node:http';
import type { CompiledHeaderEdit, CompiledPathReplace, CompiledRouteFilter } from '@minimesh/policy/client';

/** The request as filters see it: headers are edited in place; path and authority are replaced. */
export interface FilterableRequest {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly scheme: 'http' | 'https';
  /** The path with its query. */
  readonly path: string;
  readonly authority: string | undefined;
  /** Replaces the path (with query) and/or the authority the request goes on with. */
  rewrite(authority: string | undefined, path: string | undefined): void;
}

/** What the filters made of a request: it goes on (maybe with response edits), or it is answered. */
export type FilterVerdict =
  { kind: 'continue'; response: CompiledHeaderEdit[] } | { kind: 'redirect'; status: number; location: string };

const DEFAULT_PORT: Record<string, number> = { http: 80, https: 443 };
const NO_EDITS: CompiledHeaderEdit[] = [];

/** Gateway API header edits on a header map (names lower-case): add, then set, then remove. */
export function editHeaders(
  headers: Record<string, string | string[] | number | undefined> | OutgoingHttpHeaders,
  edit: CompiledHeaderEdit,
): void {
  for (const [k, v] of edit.add) {
    const cur = headers[k];
    headers[k] = cur === undefined ? v : `${Array.isArray(cur) ? cur.join(',') : String(cur)},${v}`;
  }
  for (const [k, v] of edit.set) headers[k] = v;
  for (const k of edit.remove) delete headers[k];
}

/** The longest of the rule's path prefixes that covers `path` (by whole segments), or undefined. */
export function matchedPrefix(prefixes: readonly string[], path: string): string | undefined {
  let best: string | undefined;
  for (const p of prefixes) {
    const trimmed = p === '/' ? '/' : p.replace(/\/+$/, '');
    const covers = trimmed === '/' || path === trimmed || path.startsWith(`${trimmed}/`);
    if (covers && (best === undefined || trimmed.length > best.length)) best = trimmed;
  }
  return best;
}

/** `path` (without query) with the replacement applied: the whole path, or the matched prefix. */
export function replacePath(path: string, replace: CompiledPathReplace, prefix: string | undefined): string {
  if (replace.kind === 'full') return replace.value || '/';
  if (prefix === undefined) return path;
  const rest = prefix === '/' ? path.slice(1) : path.slice(prefix.length);
  let head = replace.value;
  if (rest === '') return head || '/';
  // "/prefix/one" with prefix "/prefix" → "/one" under "/" (never "//one"); "/x" + "/one" → "/x/one".
  if (head.endsWith('/')) head = head.slice(0, -1);
  const tail = rest.startsWith('/') ? rest : `/${rest}`;
  return `${head}${tail}` || '/';
}

function splitQuery(pathAndQuery: string): [string, string] {
  const i = pathAndQuery.indexOf('?');
  return i < 0 ? [pathAndQuery, ''] : [pathAndQuery.slice(0, i), pathAndQuery.slice(i)];
}

function splitAuthority(authority: string | undefined): { host: string; port: number | undefined } {
  const a = authority ?? '';
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(a);
  if (!m) return { host: a, port: undefined };
  return { host: m[1] ?? '', port: m[2] === undefined ? undefined : Number(m[2]) };
}

/** The Location of a redirect filter for a request (Gateway API HTTPRequestRedirectFilter). */
export function redirectLocation(
  f: Extract<CompiledRouteFilter, { kind: 'redirect' }>,
  req: Pick<FilterableRequest, 'scheme' | 'path' | 'authority'>,
  prefixes: readonly string[],
): string {
  const scheme = f.scheme ?? req.scheme;
  const { host, port: reqPort } = splitAuthority(req.authority);
  // No port in the filter: the scheme's well-known one when the filter changes the scheme, else the
  // request's (its authority's port, or its scheme's default).
  const port = f.port ?? (f.scheme !== undefined ? DEFAULT_PORT[scheme] : (reqPort ?? DEFAULT_PORT[req.scheme]));
  const portPart = port === undefined || port === DEFAULT_PORT[scheme] ? '' : `:${port}`;
  const [path, query] = splitQuery(req.path);
  const newPath = f.path ? replacePath(path, f.path, matchedPrefix(prefixes, path)) : path;
  return `${scheme}://${f.host ?? host}${portPart}${newPath}${query}`;
}

/**
 * Applies a rule's (or a backend's) filters to a request, in order: header edits and rewrites in place;
 * a redirect ends it; response header edits are returned for the response. Mirrors are not applied
 * here (the route stage sends them).
 */
export function applyFilters(
  filters: readonly CompiledRouteFilter[],
  req: FilterableRequest,
  prefixes: readonly string[],
): FilterVerdict {
  let response: CompiledHeaderEdit[] = NO_EDITS;
  for (const f of filters) {
    switch (f.kind) {
      case 'requestHeaders':
        editHeaders(req.headers, f.edit);
        break;
      case 'responseHeaders':
        response = response === NO_EDITS ? [f.edit] : [...response, f.edit];
        break;
      case 'redirect':
        return { kind: 'redirect', status: f.status, location: redirectLocation(f, req, prefixes) };
      case 'rewrite': {
        const [path, query] = splitQuery(req.path);
        const newPath = f.path ? `${replacePath(path, f.path, matchedPrefix(prefixes, path))}${query}` : undefined;
        req.rewrite(f.host, newPath);
        break;
      }
      case 'mirror':
        break;
    }
  }
  return { kind: 'continue', response };
}

/** The exchange's response editor for a route's response header edits (in order). */
export function responseEditor(edits: readonly CompiledHeaderEdit[]): (headers: OutgoingHttpHeaders) => void {
  return (headers) => {
    for (const e of edits) editHeaders(headers, e);
  };
}
