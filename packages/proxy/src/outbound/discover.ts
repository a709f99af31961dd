// Outbound discovery: which endpoints serve this request or connection.
// HTTP: by authority (Host / :authority) when it is a cluster name; otherwise by the original destination.
// TCP: by the original destination (GetProfile: a ClusterIP gives fully_qualified_name → Get; a pod IP
// gives the endpoint itself). Nothing known → the original destination, in plaintext.
import { isIP } from 'node:net';
import type { DestinationResolver, Endpoint, EndpointSet } from '../destination/resolver.js';
import { keyOf } from '../destination/resolver.js';

export type Target =
  | { kind: 'balanced'; authority: string; set: EndpointSet }
  | { kind: 'endpoint'; authority: string; endpoint: Endpoint }
  | { kind: 'forward'; authority: string; ip: string; port: number };

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

async function byOriginalDst(
  resolver: DestinationResolver,
  orig: { ip: string; port: number },
  authorityText: string,
): Promise<Target> {
  const profile = await resolver.profile(orig.ip, orig.port);
  if (profile?.fullyQualifiedName) {
    const fqn = `${profile.fullyQualifiedName}:${orig.port}`;
    const set = await resolver.resolve(fqn);
    if (set.list.length > 0) return { kind: 'balanced', authority: authorityText, set };
  }
  if (profile?.endpoint) return { kind: 'endpoint', authority: authorityText, endpoint: profile.endpoint };
  return { kind: 'forward', authority: authorityText, ip: orig.ip, port: orig.port };
}

export async function discoverHttp(
  resolver: DestinationResolver,
  hostHeader: string | undefined,
  orig: { ip: string; port: number } | undefined,
  clusterDomain: string,
): Promise<Target | undefined> {
  const a = normalizeAuthority(hostHeader, orig?.port ?? 80, clusterDomain);
  if (a?.inCluster) {
    const set = await resolver.resolve(a.text);
    if (set.list.length > 0) return { kind: 'balanced', authority: a.text, set };
  }
  if (orig) return byOriginalDst(resolver, orig, a?.text ?? keyOf(orig.ip, orig.port));
  if (a && isIP(a.host) !== 0) return { kind: 'forward', authority: a.text, ip: a.host, port: a.port };
  return undefined;
}

export async function discoverTcp(resolver: DestinationResolver, orig: { ip: string; port: number }): Promise<Target> {
  return byOriginalDst(resolver, orig, keyOf(orig.ip, orig.port));
}
