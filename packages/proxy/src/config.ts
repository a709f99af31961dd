// The proxy's configuration, read from the environment the injector writes (PROXY_ENV names).
// A bad or missing setting throws a ConfigError naming the variable, the value and what is expected;
// main.ts turns it into one line and exit code 2.
import { isIP } from 'node:net';
import {
  ConfigError,
  PROXY_ENV,
  parseBoolean,
  parseDuration,
  parseLogFormat,
  parseLogLevel,
  parsePortRanges,
  type LogFormat,
  type LogLevel,
  type PortRange,
} from '@minimesh/config';
import { parseListenAddr } from '@minimesh/runtime';
import { parsePolicyConfig, type PolicyConfig } from './policy/config.js';

/** A control-plane service: where to dial and which identity must answer (TLS unless the address is loopback). */
export interface ControlAddr {
  /** "host:port" or "unix:/path" (tests); the gRPC target. */
  addr: string;
  /** The expected server identity (the *_NAME variable); undefined means plaintext. */
  name: string | undefined;
  /** True when the address is loopback or a unix socket: plaintext gRPC, as Linkerd does. */
  plaintext: boolean;
}

export interface ProxyConfig {
  logLevel: LogLevel;
  logFormat: LogFormat;
  inboundAddr: { host: string; port: number };
  outboundAddr: { host: string; port: number };
  /**
   * Further outbound listeners on the same port, from a comma-separated MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR
   * ("127.0.0.1:4140,[::1]:4140" when IPv6 is on: iptables REDIRECTs locally made IPv4 connections to
   * 127.0.0.1 and IPv6 ones to ::1, and a socket on ::1 does not take IPv4).
   */
  outboundExtraAddrs: { host: string; port: number }[];
  adminAddr: string;
  controlAddr: { host: string; port: number };
  destination: ControlAddr;
  /** The destination context token (JSON {"ns","nodeName","pod"}), passed through to Get/GetProfile. */
  destinationContext: string;
  identity: ControlAddr;
  /** Our own identity, e.g. web.default.serviceaccount.identity.minimesh.cluster.local */
  localIdentity: string;
  trustAnchorsPem: string;
  tokenFile: string;
  identityDir: string | undefined;
  clusterDomain: string;
  /** Ports where protocol detection is skipped (server-speaks-first protocols), both directions. */
  opaquePorts: PortRange[];
  inboundPorts: PortRange[];
  outboundConnectTimeoutMs: number;
  inboundConnectTimeoutMs: number;
  detectTimeoutMs: number;
  /**
   * How long an HTTP/1 client may take to send a request's headers (from the first byte of the request,
   * or of the connection) before it gets 408 and the connection is closed: the slowloris bound on the
   * inbound and outbound listeners, and on the admin server. Default 30 s (hyper's header read timeout).
   */
  headerReadTimeoutMs: number;
  /** How long an unused destination stream is kept (Linkerd: 5 s outbound). */
  outboundDiscoveryIdleMs: number;
  shutdownEndpointEnabled: boolean;
  shutdownGracePeriodMs: number;
  /** The only identity allowed to tap this proxy; undefined: no tap server (Linkerd's LINKERD2_PROXY_TAP_SVC_NAME). */
  tapSvcName: string | undefined;
  /** The policy controller and the inbound default policy (src/policy/config.ts). */
  policy: PolicyConfig;
}

/** Names this package adds beside PROXY_ENV (kept here so PROXY_ENV stays the injector's contract). */
export const EXTRA_ENV = {
  clusterDomain: 'MINIMESH_PROXY_CLUSTER_DOMAIN',
  outboundDiscoveryIdle: 'MINIMESH_PROXY_OUTBOUND_DISCOVERY_IDLE_TIMEOUT',
  headerReadTimeout: 'MINIMESH_PROXY_HTTP1_HEADER_READ_TIMEOUT',
} as const;

type Env = Record<string, string | undefined>;

function required(env: Env, name: string, expected: string): string {
  const v = env[name];
  if (v === undefined || v.trim() === '') throw new ConfigError(name, v ?? '', expected);
  return v;
}

function optional(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
}

/** An optional mesh identity name (DNS-like: lower-case labels separated by dots). */
function identityName(env: Env, name: string): string | undefined {
  const v = optional(env, name);
  if (v !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(v))
    throw new ConfigError(
      name,
      v,
      'an identity such as minimesh-tap.minimesh.serviceaccount.identity.minimesh.cluster.local',
    );
  return v;
}

function listenAddr(env: Env, name: string, fallback: string): { host: string; port: number } {
  const value = optional(env, name) ?? fallback;
  try {
    return parseListenAddr(name, value);
  } catch (err) {
    throw new ConfigError(name, value, 'host:port such as 0.0.0.0:4143 or 127.0.0.1:4140', { cause: err });
  }
}

/** The outbound listen address(es): one host:port, or several separated by commas. */
function outboundAddrs(env: Env): Pick<ProxyConfig, 'outboundAddr' | 'outboundExtraAddrs'> {
  const value = optional(env, PROXY_ENV.outboundListenAddr) ?? '127.0.0.1:4140';
  const all = value
    .split(',')
    .map((part) => listenAddr({ [PROXY_ENV.outboundListenAddr]: part.trim() }, PROXY_ENV.outboundListenAddr, ''));
  return { outboundAddr: all[0]!, outboundExtraAddrs: all.slice(1) };
}

const DNS_NAME = /^(?=.{1,253}$)([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\.?$/i;

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

function controlAddr(env: Env, addrVar: string, nameVar: string): ControlAddr {
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

function duration(env: Env, name: string, fallback: string): number {
  return parseDuration(name, optional(env, name) ?? fallback);
}

/** A duration that must be above zero (a zero timeout would switch the bound off). */
function positiveDuration(env: Env, name: string, fallback: string): number {
  const ms = duration(env, name, fallback);
  if (ms <= 0) throw new ConfigError(name, optional(env, name) ?? fallback, 'a duration above zero such as 30s');
  return ms;
}

/** Parses the proxy environment. Throws ConfigError (exit code 2) on the first bad or missing setting. */
export function parseProxyConfig(env: Env): ProxyConfig {
  const E = PROXY_ENV;
  const localIdentity = required(
    env,
    E.identityLocalName,
    "this proxy's identity, e.g. web.default.serviceaccount.identity.minimesh.cluster.local",
  );
  if (!DNS_NAME.test(localIdentity))
    throw new ConfigError(E.identityLocalName, localIdentity, 'a DNS-like identity name');
  const trustAnchorsPem = required(
    env,
    E.trustAnchors,
    'the trust anchors as PEM text (-----BEGIN CERTIFICATE-----...)',
  );
  if (!trustAnchorsPem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ConfigError(
      E.trustAnchors,
      trustAnchorsPem.slice(0, 40),
      'PEM certificates (-----BEGIN CERTIFICATE-----...)',
    );
  }
  const clusterDomain = (optional(env, EXTRA_ENV.clusterDomain) ?? 'cluster.local').replace(/\.$/, '');
  if (!DNS_NAME.test(clusterDomain))
    throw new ConfigError(EXTRA_ENV.clusterDomain, clusterDomain, 'a DNS domain such as cluster.local');
  const cfg: ProxyConfig = {
    logLevel: parseLogLevel(E.logLevel, optional(env, E.logLevel) ?? 'info'),
    logFormat: parseLogFormat(E.logFormat, optional(env, E.logFormat) ?? 'plain'),
    inboundAddr: listenAddr(env, E.inboundListenAddr, '0.0.0.0:4143'),
    ...outboundAddrs(env),
    adminAddr: '',
    controlAddr: listenAddr(env, E.controlListenAddr, '0.0.0.0:4190'),
    destination: controlAddr(env, E.destinationSvcAddr, E.destinationSvcName),
    destinationContext: optional(env, E.destinationContext) ?? '',
    identity: controlAddr(env, E.identitySvcAddr, E.identitySvcName),
    localIdentity: localIdentity.replace(/\.$/, ''),
    trustAnchorsPem,
    tokenFile: required(env, E.identityTokenFile, 'the path of the projected service-account token'),
    identityDir: optional(env, E.identityDir),
    clusterDomain,
    opaquePorts: parsePortRanges(E.opaquePorts, optional(env, E.opaquePorts) ?? ''),
    inboundPorts: parsePortRanges(E.inboundPorts, optional(env, E.inboundPorts) ?? ''),
    outboundConnectTimeoutMs: duration(env, E.outboundConnectTimeout, '1s'),
    inboundConnectTimeoutMs: duration(env, E.inboundConnectTimeout, '1s'),
    detectTimeoutMs: duration(env, E.detectTimeout, '10s'),
    headerReadTimeoutMs: positiveDuration(env, EXTRA_ENV.headerReadTimeout, '30s'),
    outboundDiscoveryIdleMs: duration(env, EXTRA_ENV.outboundDiscoveryIdle, '5s'),
    shutdownEndpointEnabled: parseBoolean(
      E.shutdownEndpointEnabled,
      optional(env, E.shutdownEndpointEnabled) ?? 'false',
    ),
    shutdownGracePeriodMs: duration(env, E.shutdownGracePeriod, '2m'),
    tapSvcName: identityName(env, E.tapSvcName),
    policy: parsePolicyConfig(env, (a, n) => controlAddr(env, a, n), optional(env, E.destinationContext) ?? ''),
  };
  const admin = optional(env, E.adminListenAddr) ?? '0.0.0.0:4191';
  listenAddr(env, E.adminListenAddr, '0.0.0.0:4191');
  cfg.adminAddr = admin;
  if (cfg.destinationContext !== '') {
    try {
      JSON.parse(cfg.destinationContext);
    } catch (err) {
      if (!cfg.destinationContext.startsWith('ns:')) {
        throw new ConfigError(
          E.destinationContext,
          cfg.destinationContext,
          'JSON such as {"ns":"default","nodeName":"n1","pod":"web-0"}',
          { cause: err },
        );
      }
    }
  }
  return cfg;
}
