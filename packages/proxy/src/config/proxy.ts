// The proxy's configuration, read from the environment the injector writes (PROXY_ENV names).
// A bad or missing setting throws a ConfigError naming the variable, the value and what is expected;
// main.ts turns it into one line and exit code 2.
import {
  ConfigError,
  PROXY_ENV,
  formatIp,
  parseBoolean,
  parseDuration,
  parseLogFormat,
  parseLogLevel,
  parseIp,
  parsePortRanges,
  unmapIpv4,
  type LogFormat,
  type LogLevel,
  type PortRange,
} from '@minimesh/config';
import { parseListenAddr } from '@minimesh/runtime';
import { controlAddr, DNS_NAME, optional, required, type ControlAddr, type Env } from './control-addr.js';
import { parsePolicyConfig, type PolicyConfig } from './policy.js';

export type { ControlAddr };

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
  /**
   * This pod's own IPs (MINIMESH_PROXY_INBOUND_IPS, from status.podIPs), canonical text. An outbound
   * endpoint at one of them is this pod: it is reached in plaintext, straight to the app, because the
   * proxy's own connections skip the iptables redirect, so mTLS to it would land on the app (Linkerd's
   * outbound does the same for its `inbound_ips`). Empty: no endpoint is treated as local.
   */
  inboundIps: string[];
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
  /** The policy controller and the inbound default policy (config/policy.ts). */
  policy: PolicyConfig;
  /**
   * The HTTP/2 server the proxy's callers reach (MINIMESH_PROXY_HTTP2_ENGINE): the proxy's own ('minimesh',
   * the default; src/h2) or node:http2's ('node'), kept to compare the two and as a fallback.
   */
  h2Engine: H2Engine;
}

/** Which HTTP/2 engine serves the proxy's callers and carries its requests to HTTP/2 upstreams. */
export type H2Engine = 'minimesh' | 'node';

/** Names this package adds beside PROXY_ENV (kept here so PROXY_ENV stays the injector's contract). */
export const EXTRA_ENV = {
  clusterDomain: 'MINIMESH_PROXY_CLUSTER_DOMAIN',
  outboundDiscoveryIdle: 'MINIMESH_PROXY_OUTBOUND_DISCOVERY_IDLE_TIMEOUT',
  headerReadTimeout: 'MINIMESH_PROXY_HTTP1_HEADER_READ_TIMEOUT',
  http2Engine: 'MINIMESH_PROXY_HTTP2_ENGINE',
} as const;

function h2Engine(env: Env): H2Engine {
  const v = optional(env, EXTRA_ENV.http2Engine) ?? 'minimesh';
  if (v !== 'minimesh' && v !== 'node')
    throw new ConfigError(
      EXTRA_ENV.http2Engine,
      v,
      '"minimesh" (the proxy\'s own HTTP/2 server) or "node" (node:http2)',
    );
  return v;
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

/** Comma-separated IP addresses, each in canonical text (RFC 5952 for IPv6); unset or empty: none. */
function ipList(env: Env, name: string): string[] {
  const value = optional(env, name) ?? '';
  return value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      const ip = parseIp(part);
      if (ip === undefined)
        throw new ConfigError(
          name,
          value,
          `IP addresses separated by commas, such as 10.42.0.7,fd00::7 ("${part}" is not one)`,
        );
      return formatIp(unmapIpv4(ip));
    });
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
    inboundIps: ipList(env, E.inboundIps),
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
    policy: parsePolicyConfig(env, optional(env, E.destinationContext) ?? ''),
    h2Engine: h2Engine(env),
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
