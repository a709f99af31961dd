// Which requests a tap wants: Linkerd's ObserveRequest.Match (all, any, not, source/destination
// netmask or port range, HTTP scheme/method/authority/path, destination and route labels), compiled
// once per tap into a predicate over the request. Pure.
import { BlockList, isIP } from 'node:net';
import { fromIpAddress, httpTypes, type tap } from '@minimesh/proto';

/** What a tap can see of a request before it is forwarded. */
export interface TapView {
  source: { ip: string; port: number };
  destination: { ip: string; port: number };
  /** Destination's metric labels of the endpoint (outbound), without the dst_ prefix. */
  destinationLabels: Readonly<Record<string, string>>;
  routeLabels: Readonly<Record<string, string>>;
  /** Upper case. */
  method: string;
  scheme: 'http' | 'https';
  authority: string;
  path: string;
}

export type TapMatcher = (v: TapView) => boolean;

export class TapMatchError extends Error {
  readonly code = 'MINIMESH_PROXY_TAP_BAD_MATCH';
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'CONNECT', 'HEAD', 'TRACE'];

function methodOf(m: httpTypes.HttpMethod): string {
  const t = m.type;
  if (!t) throw new TapMatchError('http method match: no method given');
  return t.$case === 'registered' ? (METHODS[t.value] ?? '') : t.value.toUpperCase();
}

function schemeOf(s: httpTypes.Scheme): string {
  const t = s.type;
  if (!t) throw new TapMatchError('http scheme match: no scheme given');
  return t.$case === 'registered'
    ? t.value === httpTypes.Scheme_Registered.HTTPS
      ? 'https'
      : 'http'
    : t.value.toLowerCase();
}

function stringMatch(m: tap.ObserveRequest_Match_Http_StringMatch, what: string): (s: string) => boolean {
  const x = m.match;
  if (!x) throw new TapMatchError(`${what} match: neither exact nor prefix`);
  const v = x.value;
  return x.$case === 'exact' ? (s) => s === v : (s) => s.startsWith(v);
}

function tcpMatch(m: tap.ObserveRequest_Match_Tcp, side: 'source' | 'destination'): TapMatcher {
  const x = m.match;
  if (!x) throw new TapMatchError(`${side} match: neither netmask nor ports`);
  if (x.$case === 'ports') {
    const { min, max } = x.value;
    // Linkerd: an unset end of the range makes it a single port.
    const lo = min || max;
    const hi = max || min;
    return (v) => v[side].port >= lo && v[side].port <= hi;
  }
  const ip = fromIpAddress(x.value.ip);
  if (!ip) throw new TapMatchError(`${side} netmask: no IP address`);
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
  const bits = family === 'ipv4' ? 32 : 128;
  const mask = x.value.mask;
  if (mask > bits) throw new TapMatchError(`${side} netmask: /${mask} is longer than ${bits} bits`);
  const list = new BlockList();
  list.addSubnet(ip, mask, family);
  return (v) => {
    const a = v[side].ip;
    const f = isIP(a) === 6 ? 'ipv6' : 'ipv4';
    return f === family && list.check(a, f);
  };
}

/** Compiles a match tree; undefined (no match given) takes every request. Throws TapMatchError. */
export function compileMatch(match: tap.ObserveRequest_Match | undefined, depth = 0): TapMatcher {
  if (match === undefined) return () => true;
  if (depth > 32) throw new TapMatchError('match is nested more than 32 deep');
  const m = match.match;
  if (!m) throw new TapMatchError('match: empty (expected all, any, not, source, destination, http or a label)');
  switch (m.$case) {
    case 'all': {
      const subs = m.value.matches.map((s) => compileMatch(s, depth + 1));
      return (v) => subs.every((f) => f(v));
    }
    case 'any': {
      const subs = m.value.matches.map((s) => compileMatch(s, depth + 1));
      return (v) => subs.some((f) => f(v));
    }
    case 'not': {
      const inner = compileMatch(m.value, depth + 1);
      return (v) => !inner(v);
    }
    case 'source':
      return tcpMatch(m.value, 'source');
    case 'destination':
      return tcpMatch(m.value, 'destination');
    case 'destinationLabel': {
      const { key, value } = m.value;
      return (v) => v.destinationLabels[key] === value;
    }
    case 'routeLabel': {
      const { key, value } = m.value;
      return (v) => v.routeLabels[key] === value;
    }
    case 'http': {
      const h = m.value.match;
      if (!h) throw new TapMatchError('http match: empty (expected scheme, method, authority or path)');
      switch (h.$case) {
        case 'scheme': {
          const s = schemeOf(h.value);
          return (v) => v.scheme === s;
        }
        case 'method': {
          const method = methodOf(h.value);
          return (v) => v.method === method;
        }
        case 'authority': {
          const f = stringMatch(h.value, 'authority');
          return (v) => f(v.authority);
        }
        case 'path': {
          const f = stringMatch(h.value, 'path');
          return (v) => f(v.path);
        }
        default:
          throw new TapMatchError('http match: unknown kind');
      }
    }
    default:
      throw new TapMatchError('match: unknown kind');
  }
}
