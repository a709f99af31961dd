// The control-plane services the proxy dials (identity, destination, policy): where, and which identity
// must answer. Shared by the proxy's settings and its policy settings, which both name such services.
import { isIP } from 'node:net';
import { ConfigError } from '@minimesh/config';

/** A control-plane service: where to dial and which identity must answer (TLS unless the address is loopback). */
export interface ControlAddr {
  /** "host:port" or "unix:/path" (tests); the gRPC target. */
  addr: string;
  /** The expected server identity (the *_NAME variable); undefined means plaintext. */
  name: string | undefined;
  /** True when the address is loopback or a unix socket: plaintext gRPC, as Linkerd does. */
  plaintext: boolean;
}

export type Env = Record<string, string | undefined>;

export function required(env: Env, name: string, expected: string): string {
  const v = env[name];
  if (v === undefined || v.trim() === '') throw new ConfigError(name, v ?? '', expected);
  return v;
}

export function optional(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
}

/** A DNS name (or a DNS-like identity name), an optional trailing dot allowed. */
export const DNS_NAME = /^(?=.{1,253}$)([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\.?$/i;

function isLoopbackHost(host: string): boolean {
  const h = host
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1';
  return false;
}

export function controlAddr(env: Env, addrVar: string, nameVar: string): ControlAddr {
  const addr = required(
    env,
    addrVar,
    'host:port of the control-plane service, e.g. minimesh-dst-headless.minimesh.svc.cluster.local.:8086',
  );
  if (addr.startsWith('unix:')) {
    return { addr, name: optional(env, nameVar), plaintext: true };
  }
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(addr.trim());
  const host = m ? (m[1] ?? m[2] ?? '') : '';
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 1 && port <= 65535) || (isIP(host) === 0 && !DNS_NAME.test(host))) {
    throw new ConfigError(
      addrVar,
      addr,
      'host:port such as minimesh-identity-headless.minimesh.svc.cluster.local.:8080 or 127.0.0.1:8080',
    );
  }
  const plaintext = isLoopbackHost(host);
  const name = optional(env, nameVar);
  if (!plaintext && name === undefined) {
    throw new ConfigError(
      nameVar,
      '',
      `the identity of the service at ${addrVar} (required because ${addr} is not loopback)`,
    );
  }
  if (name !== undefined && !DNS_NAME.test(name)) throw new ConfigError(nameVar, name, 'a DNS-like identity name');
  // A fully qualified name's trailing dot is dropped for the gRPC target: name lookups through
  // /etc/hosts (the local cluster, many test setups) do not match "name." entries.
  const target = isIP(host) === 6 ? `[${host}]:${port}` : `${host.replace(/\.$/, '')}:${port}`;
  return { addr: target, name, plaintext };
}
