// Parses the authority of a GetDestination request ("host:port") into what the index understands.
// Pure; errors are domain errors (server maps them to InvalidArgument).
import { isIP } from 'node:net';
import { DestinationError, invalidAuthority } from '../errors.js';

export type ParsedAuthority =
  | { kind: 'service'; namespace: string; service: string; port: number; hostname?: string }
  | { kind: 'ip'; ip: string; port: number };

// RFC 1123 labels: at most 63 characters.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Splits "host:port", "[v6]:port" or "host" (port 80). */
function splitHostPort(authority: string, clusterDomain: string): { host: string; port: number } {
  let host = authority;
  let portText: string | undefined;
  const bracket = /^\[([^\]]+)\](?::(.*))?$/.exec(authority);
  if (bracket) {
    host = bracket[1] ?? '';
    portText = bracket[2];
  } else {
    const colons = authority.split(':').length - 1;
    if (colons === 1) {
      const i = authority.lastIndexOf(':');
      host = authority.slice(0, i);
      portText = authority.slice(i + 1);
    } else if (colons > 1) {
      host = authority; // a bare IPv6 address
    }
  }
  let port = 80;
  if (portText !== undefined) {
    port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
    if (!(port >= 1 && port <= 65535))
      throw invalidAuthority(authority, `port "${portText}" is not a number 1-65535`, clusterDomain);
  }
  return { host, port };
}

/** Longest authority looked at: a 253-character DNS name, ":", a port, with room for brackets. */
export const MAX_AUTHORITY_LENGTH = 512;

/** Accepts service names and IP addresses (GetProfile takes both). */
export function parseAuthority(authority: string, clusterDomain: string): ParsedAuthority {
  if (authority.length > MAX_AUTHORITY_LENGTH)
    throw invalidAuthority(authority, `it is longer than ${MAX_AUTHORITY_LENGTH} characters`, clusterDomain);
  const trimmed = authority.trim();
  if (trimmed === '') throw invalidAuthority(authority, 'it is empty', clusterDomain);
  const { host, port } = splitHostPort(trimmed, clusterDomain);
  if (isIP(host) !== 0) return { kind: 'ip', ip: host, port };
  const name = host.toLowerCase().replace(/\.$/, '');
  const suffix = `.svc.${clusterDomain.replace(/\.$/, '')}`;
  if (!name.endsWith(suffix))
    throw invalidAuthority(authority, `"${host}" is not a name in the cluster domain ${clusterDomain}`, clusterDomain);
  const labels = name.slice(0, -suffix.length).split('.');
  if (labels.some((l) => !DNS_LABEL.test(l)))
    throw invalidAuthority(authority, `"${host}" is not made of DNS labels`, clusterDomain);
  if (labels.length === 2)
    return { kind: 'service', service: labels[0] as string, namespace: labels[1] as string, port };
  if (labels.length === 3)
    return {
      kind: 'service',
      hostname: labels[0] as string,
      service: labels[1] as string,
      namespace: labels[2] as string,
      port,
    };
  throw invalidAuthority(authority, `"${host}" has ${labels.length} name labels before .svc`, clusterDomain);
}

/** Get serves service names only. */
export function parseServiceAuthority(
  authority: string,
  clusterDomain: string,
): Extract<ParsedAuthority, { kind: 'service' }> {
  const parsed = parseAuthority(authority, clusterDomain);
  if (parsed.kind === 'ip') {
    throw new DestinationError(
      'MINIMESH_DESTINATION_IP_QUERY',
      `authority "${authority}": IP queries are not supported by Get; expected <service>.<namespace>.svc.${clusterDomain}[:<port>] or <hostname>.<service>.<namespace>.svc.${clusterDomain}[:<port>] (GetProfile accepts IP:port)`,
    );
  }
  return parsed;
}

export interface ContextToken {
  ns?: string;
  nodeName?: string;
  pod?: string;
}

/** Longest context token read; a longer one is ignored like an unparseable one. */
export const MAX_CONTEXT_TOKEN_LENGTH = 4096;

/**
 * The proxy's context token: JSON {"ns","nodeName","pod"}, or the legacy "ns:<name>". Unparseable,
 * not an object, or over MAX_CONTEXT_TOKEN_LENGTH → {} (the token only labels logs; nothing is
 * decided by it).
 */
export function parseContextToken(token: string): ContextToken {
  if (token.length > MAX_CONTEXT_TOKEN_LENGTH) return {};
  const text = token.trim();
  if (text === '') return {};
  if (text.startsWith('ns:')) return { ns: text.slice(3) };
  try {
    const v = JSON.parse(text) as unknown;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return {};
    const o = v as Record<string, unknown>;
    const out: ContextToken = {};
    if (typeof o.ns === 'string') out.ns = o.ns;
    if (typeof o.nodeName === 'string') out.nodeName = o.nodeName;
    if (typeof o.pod === 'string') out.pod = o.pod;
    return out;
  } catch {
    return {};
  }
}
