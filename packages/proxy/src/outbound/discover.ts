// Outbound discover: Logical → Concrete, which endpoints serve this request or connection.
// HTTP: by authority (Host / :authority) when it is a cluster name; otherwise by the original destination.
// TCP: by the original destination (GetProfile: a ClusterIP gives fully_qualified_name → Get; a pod IP
// gives the endpoint itself). Nothing known → the original destination, in plaintext.
import { isIP } from 'node:net';
import type { DestinationResolver } from '../destination/resolver.js';
import { ProxyError } from '../errors.js';
import { keyOf, plainEndpoint, type Addr, type Concrete, type Endpoint, type Logical } from '../targets.js';

export interface Authority {
  host: string;
  port: number;
  /** "host:port" */
  text: string;
  /** The host ends in svc.<cluster-domain> */
  inCluster: boolean;
}

/** Normalizes a Host/:authority: lowercase, no trailing dot, explicit port (from the original destination or 80). */
export function normalizeAuthority(
  value: string | undefined,
  defaultPort: number,
  clusterDomain: string,
): Authority | undefined {
  if (!value) return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(value.trim().toLowerCase());
  if (!m) return undefined;
  const host = (m[1] ?? m[2] ?? '').replace(/\.$/, '');
  const port = m[3] !== undefined ? Number(m[3]) : defaultPort;
  if (!host || !(port >= 1 && port <= 65535)) return undefined;
  const inCluster = isIP(host) === 0 && host.endsWith(`.svc.${clusterDomain}`);
  return { host, port, text: `${isIP(host) === 6 ? `[${host}]` : host}:${port}`, inCluster };
}

export interface Discover {
  /**
   * The concrete target of an HTTP request when it is known already: a cluster name whose endpoints
   * destination has sent (the common case), without a promise or a new object. Undefined: use http().
   */
  httpNow(logical: Logical): Concrete | undefined;
  /** The concrete target of an HTTP request. */
  http(logical: Logical): Promise<Concrete>;
  /** The concrete target of an opaque connection (it always has an original destination). */
  tcp(orig: Addr): Promise<Concrete>;
}

export function createDiscover(resolver: DestinationResolver, clusterDomain: string): Discover {
  // Host values seen, normalized once (a request's Host is usually one of a few names).
  const authorities = new Map<string, Authority | null>();
  const authority = (host: string | undefined, defaultPort: number): Authority | undefined => {
    if (host === undefined) return undefined;
    const key = `${host}|${defaultPort}`;
    let a = authorities.get(key);
    if (a === undefined) {
      if (authorities.size >= 10_000) authorities.clear();
      authorities.set(key, (a = normalizeAuthority(host, defaultPort, clusterDomain) ?? null));
    }
    return a ?? undefined;
  };
  // One Concrete per endpoint set: the set's list changes in place as destination updates it.
  const balanced = new WeakMap<object, Concrete>();
  // Endpoints for original destinations nobody discovered, made once per address.
  const plain = new Map<string, Endpoint>();
  const forward = (authority: string, ip: string, port: number): Concrete => {
    const key = keyOf(ip, port);
    let endpoint = plain.get(key);
    if (!endpoint) {
      if (plain.size >= 10_000) plain.clear();
      plain.set(key, (endpoint = plainEndpoint(ip, port)));
    }
    return { kind: 'forward', authority, endpoint };
  };

  async function byOriginalDst(orig: Addr, authority: string): Promise<Concrete> {
    const profile = await resolver.profile(orig.ip, orig.port);
    if (profile?.fullyQualifiedName) {
      const set = await resolver.resolve(`${profile.fullyQualifiedName}:${orig.port}`);
      if (set.list.length > 0) return { kind: 'balanced', authority, set };
    }
    if (profile?.endpoint) return { kind: 'endpoint', authority, endpoint: profile.endpoint };
    return forward(authority, orig.ip, orig.port);
  }

  return {
    httpNow({ host, orig }) {
      const a = authority(host, orig?.port ?? 80);
      if (!a?.inCluster) return undefined;
      const set = resolver.peekSet(a.text);
      if (!set || set.list.length === 0) return undefined;
      let c = balanced.get(set);
      if (!c) balanced.set(set, (c = { kind: 'balanced', authority: a.text, set }));
      return c;
    },
    async http({ host, orig }) {
      const a = authority(host, orig?.port ?? 80);
      if (a?.inCluster) {
        const set = await resolver.resolve(a.text);
        if (set.list.length > 0) return { kind: 'balanced', authority: a.text, set };
      }
      if (orig) return byOriginalDst(orig, a?.text ?? orig.key);
      if (a && isIP(a.host) !== 0) return forward(a.text, a.host, a.port);
      throw new ProxyError(
        'MINIMESH_PROXY_NO_ORIGINAL_DST',
        `request for ${host ?? '(no host)'}: no original destination and the authority is not a mesh service`,
      );
    },
    tcp: (orig) => byOriginalDst(orig, orig.key),
  };
}
