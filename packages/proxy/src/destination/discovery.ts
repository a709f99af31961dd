// What destination's answers make of what the app asked for: a Logical target (targets.ts) per request
// or TCP connection, for the outbound discover stages.
// HTTP: by authority (Host / :authority) when it is a cluster name; otherwise by the original destination.
// TCP: by the original destination (GetProfile: a ClusterIP gives fully_qualified_name → Get; a pod IP
// gives the endpoint itself). Nothing known → the original destination, in plaintext.
import { isIP } from 'node:net';
import { ProxyError } from '../errors.js';
import {
  keyOf,
  plainEndpoint,
  type Addr,
  type Concrete,
  type Endpoint,
  type Logical,
  type OutboundTarget,
} from '../targets.js';
import type { DestinationResolver } from './resolver.js';

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

/** The policy target of a request: the Service name when the authority is one, else the original destination. */
export function outboundTarget(
  authority: string,
  orig: Addr | undefined,
  clusterDomain: string,
): OutboundTarget | undefined {
  const colon = authority.lastIndexOf(':');
  const host = colon > 0 ? authority.slice(0, colon) : authority;
  if (host.endsWith(`.svc.${clusterDomain}`) && colon > 0) return { kind: 'authority', authority };
  return orig ? { kind: 'addr', ip: orig.ip, port: orig.port } : undefined;
}

export interface Discovery {
  /**
   * The Logical target of an HTTP request when it is known already: a cluster name whose endpoints
   * destination has sent (the common case), without a promise or a new object. Undefined: use http().
   */
  httpNow(host: string | undefined, orig: Addr | undefined): Logical | undefined;
  /** The Logical target of an HTTP request (throws when there is nothing to send it to). */
  http(host: string | undefined, orig: Addr | undefined): Promise<Logical>;
  /** The Logical target of an opaque connection (it always has an original destination). */
  tcp(orig: Addr): Promise<Logical>;
}

export function createDiscovery(resolver: DestinationResolver, clusterDomain: string): Discovery {
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
  const logical = (authority: string, orig: Addr | undefined, concrete: Concrete): Logical => ({
    authority,
    policy: outboundTarget(authority, orig, clusterDomain),
    concrete,
  });
  // One Logical per endpoint set: the set's list changes in place as destination updates it.
  const balanced = new WeakMap<object, Logical>();
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

  async function byOriginalDst(orig: Addr, authority: string): Promise<Logical> {
    const profile = await resolver.profile(orig.ip, orig.port);
    if (profile?.fullyQualifiedName) {
      const set = await resolver.resolve(`${profile.fullyQualifiedName}:${orig.port}`);
      if (set.list.length > 0) return logical(authority, orig, { kind: 'balanced', authority, set });
    }
    if (profile?.endpoint) return logical(authority, orig, { kind: 'endpoint', authority, endpoint: profile.endpoint });
    return logical(authority, orig, forward(authority, orig.ip, orig.port));
  }

  return {
    httpNow(host, orig) {
      const a = authority(host, orig?.port ?? 80);
      if (!a?.inCluster) return undefined;
      const set = resolver.peekSet(a.text);
      if (!set || set.list.length === 0) return undefined;
      let l = balanced.get(set);
      if (!l) balanced.set(set, (l = logical(a.text, undefined, { kind: 'balanced', authority: a.text, set })));
      return l;
    },
    async http(host, orig) {
      const a = authority(host, orig?.port ?? 80);
      if (a?.inCluster) {
        const set = await resolver.resolve(a.text);
        if (set.list.length > 0) return logical(a.text, orig, { kind: 'balanced', authority: a.text, set });
      }
      if (orig) return byOriginalDst(orig, a?.text ?? orig.key);
      if (a && isIP(a.host) !== 0) return logical(a.text, orig, forward(a.text, a.host, a.port));
      throw new ProxyError(
        'MINIMESH_PROXY_NO_ORIGINAL_DST',
        `request for ${host ?? '(no host)'}: no original destination and the authority is not a mesh service`,
      );
    },
    tcp: (orig) => byOriginalDst(orig, orig.key),
  };
}
