// HTTP route selection over the proxy API's route form (http_route.proto), as linkerd2-proxy orders
// matches: among routes whose hosts match best (an exact host over a longer wildcard suffix over none),
// the match covering the most of the path wins (an exact or regex match covers all of it, a prefix its
// own length), then more headers, more query parameters, a method; ties go to the earlier route and
// rule. Compiled once per policy update, so a request costs a few comparisons.
import type { httpRoute } from '@minimesh/proto';

/** What a route match looks at in a request. */
export interface RequestView {
  method: string;
  /** The path without the query. */
  path: string;
  /** The query string without "?" ('' when none). */
  query: string;
  /** :authority or Host, without the port; lower-case. */
  host: string;
  header(name: string): string | undefined;
}

export interface CompiledMatch {
  /**
   * How specifically the request matches (compared as a tuple, higher wins), or undefined: no match.
   * The array may be reused by the next call: copy it to keep it.
   */
  score(req: RequestView): readonly number[] | undefined;
}

export type HostMatcher = { exact: string } | { suffix: string };

export interface CompiledRouteBase {
  hosts: HostMatcher[];
  rules: Array<{ matches: CompiledMatch[] }>;
}

/** "a.b.c" under HostMatch: exact compares the whole name, suffix "*.b.c" needs at least one more label. */
export function compileHosts(hosts: readonly httpRoute.HostMatch[]): HostMatcher[] {
  return hosts.flatMap((h): HostMatcher[] => {
    const m = h.match;
    if (!m) return [];
    if (m.$case === 'exact') return [{ exact: m.value.toLowerCase() }];
    return [{ suffix: `.${[...m.value.reverseLabels].reverse().join('.').toLowerCase()}` }];
  });
}

/** Host score: 0 no match, 1 any host (route without hosts), 2+len for a suffix, 10000 for exact. */
export function hostScore(hosts: readonly HostMatcher[], host: string): number {
  if (hosts.length === 0) return 1;
  let best = 0;
  for (const h of hosts) {
    if ('exact' in h) {
      if (h.exact === host) return 10_000;
    } else if (host.endsWith(h.suffix) && host.length > h.suffix.length) best = Math.max(best, 2 + h.suffix.length);
  }
  return best;
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'CONNECT', 'HEAD', 'TRACE'];

function methodName(m: httpRoute.HttpRouteMatch['method']): string | undefined {
  const t = m?.type;
  if (!t) return undefined;
  return t.$case === 'registered' ? METHODS[t.value] : t.value.toUpperCase();
}

/** Whether `path` is under `prefix` by whole segments ("/api" covers "/api" and "/api/x", not "/apix"). */
export function pathHasPrefix(path: string, prefix: string): boolean {
  if (prefix === '/' || prefix === '') return true;
  const p = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  return path === p || path.startsWith(`${p}/`);
}

function queryParam(query: string, name: string): string | undefined {
  for (const pair of query.split('&')) {
    const i = pair.indexOf('=');
    const k = i < 0 ? pair : pair.slice(0, i);
    if (k === name) return i < 0 ? '' : decodeURIComponent(pair.slice(i + 1).replace(/\+/g, ' '));
  }
  return undefined;
}

/** Full-string regular expressions, as the Gateway API means them. */
function anchored(source: string): RegExp {
  return new RegExp(`^(?:${source})$`);
}

export function compileMatch(m: httpRoute.HttpRouteMatch): CompiledMatch {
  const tests: Array<(r: RequestView) => boolean> = [];
  // How much of the path the match covers.
  // No path: any path, as PathPrefix "/" (the Gateway API's default), so it ranks with one.
  let pathLen: (r: RequestView) => number | undefined = () => 1;
  const p = m.path?.kind;
  if (p?.$case === 'exact') {
    const v = p.value;
    pathLen = (r) => (r.path === v ? v.length : undefined);
  } else if (p?.$case === 'prefix') {
    const v = p.value;
    const len = v === '/' ? 1 : v.replace(/\/+$/, '').length;
    pathLen = (r) => (pathHasPrefix(r.path, v) ? len : undefined);
  } else if (p?.$case === 'regex') {
    const re = anchored(p.value);
    pathLen = (r) => (re.test(r.path) ? r.path.length : undefined);
  }
  const method = methodName(m.method);
  if (method) tests.push((r) => r.method === method);
  for (const h of m.headers) {
    const name = h.name.toLowerCase();
    const v = h.value;
    if (v?.$case === 'exact') {
      const want = Buffer.from(v.value).toString('latin1');
      tests.push((r) => r.header(name) === want);
    } else if (v?.$case === 'regex') {
      const re = anchored(v.value);
      tests.push((r) => {
        const got = r.header(name);
        return got !== undefined && re.test(got);
      });
    }
  }
  for (const q of m.queryParams) {
    const v = q.value;
    if (v?.$case === 'exact') tests.push((r) => queryParam(r.query, q.name) === v.value);
    else if (v?.$case === 'regex') {
      const re = anchored(v.value);
      tests.push((r) => {
        const got = queryParam(r.query, q.name);
        return got !== undefined && re.test(got);
      });
    }
  }
  const out = [0, m.headers.length, m.queryParams.length, method ? 1 : 0];
  return {
    score: (r) => {
      const len = pathLen(r);
      if (len === undefined) return undefined;
      for (const t of tests) if (!t(r)) return undefined;
      out[0] = len;
      return out;
    },
  };
}

/** A rule without matches matches every request, least specifically. */
const ANY_SCORE = [0] as const;
const ANY_ONLY: readonly CompiledMatch[] = [{ score: () => ANY_SCORE }];

/** (hostA, a) > (hostB, b) as tuples. */
function better(hostA: number, a: readonly number[], hostB: number, b: readonly number[]): boolean {
  if (hostA !== hostB) return hostA > hostB;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return false;
}

/**
 * The route and rule for a request, or undefined when nothing matches. A rule without matches matches
 * every request (with the lowest specificity).
 */
export function findRoute<R extends CompiledRouteBase>(
  routes: readonly R[],
  req: RequestView,
): { route: R; rule: R['rules'][number]; ruleIndex: number } | undefined {
  let best: { route: R; rule: R['rules'][number]; ruleIndex: number } | undefined;
  let bestHost = 0;
  let bestScore: number[] = [];
  for (const route of routes) {
    const hs = route.hosts.length === 0 ? 1 : hostScore(route.hosts, req.host);
    if (hs === 0) continue;
    for (let ruleIndex = 0; ruleIndex < route.rules.length; ruleIndex++) {
      const rule = route.rules[ruleIndex]!;
      const candidates = rule.matches.length ? rule.matches : ANY_ONLY;
      for (const m of candidates) {
        const s = m.score(req);
        if (!s) continue;
        if (!best || better(hs, s, bestHost, bestScore)) {
          best = { route, rule, ruleIndex };
          bestHost = hs;
          bestScore = s.slice();
        }
      }
    }
  }
  return best;
}

/** A RequestView over a path-with-query and a header getter (the host is worked out only if asked). */
export function requestView(
  method: string,
  pathAndQuery: string,
  host: string | undefined,
  header: (name: string) => string | undefined,
): RequestView {
  return new View(method, pathAndQuery, host, header);
}

class View implements RequestView {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  private hostName: string | undefined;

  constructor(
    method: string,
    pathAndQuery: string,
    private readonly rawHost: string | undefined,
    readonly header: (name: string) => string | undefined,
  ) {
    const q = pathAndQuery.indexOf('?');
    this.method = method.toUpperCase();
    this.path = q < 0 ? pathAndQuery || '/' : pathAndQuery.slice(0, q) || '/';
    this.query = q < 0 ? '' : pathAndQuery.slice(q + 1);
  }

  get host(): string {
    if (this.hostName === undefined) {
      const raw = (this.rawHost ?? '').toLowerCase();
      // Strip a port: "[::1]:80" → "[::1]", "web:80" → "web".
      const h = raw.startsWith('[') ? raw.slice(0, raw.indexOf(']') + 1) : (raw.split(':')[0] ?? '');
      this.hostName = h.endsWith('.') ? h.slice(0, -1) : h;
    }
    return this.hostName;
  }
}
