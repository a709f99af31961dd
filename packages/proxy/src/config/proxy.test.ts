import { describe, expect, it } from 'vitest';
import { ConfigError } from '@minimesh/config';
import { parseProxyConfig } from './proxy.js';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const base = {
  MINIMESH_PROXY_IDENTITY_LOCAL_NAME: 'web.default.serviceaccount.identity.minimesh.cluster.local',
  MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS: PEM,
  MINIMESH_PROXY_IDENTITY_TOKEN_FILE: '/var/run/secrets/tokens/minimesh-identity-token',
  MINIMESH_PROXY_IDENTITY_SVC_ADDR: 'minimesh-identity-headless.minimesh.svc.cluster.local.:8080',
  MINIMESH_PROXY_IDENTITY_SVC_NAME: 'minimesh-identity.minimesh.serviceaccount.identity.minimesh.cluster.local',
  MINIMESH_PROXY_DESTINATION_SVC_ADDR: 'minimesh-dst-headless.minimesh.svc.cluster.local.:8086',
  MINIMESH_PROXY_DESTINATION_SVC_NAME: 'minimesh-destination.minimesh.serviceaccount.identity.minimesh.cluster.local',
};

describe('parseProxyConfig', () => {
  it('reads a complete environment with Linkerd defaults', () => {
    const c = parseProxyConfig(base);
    expect(c.inboundAddr).toEqual({ host: '0.0.0.0', port: 4143 });
    expect(c.outboundAddr).toEqual({ host: '127.0.0.1', port: 4140 });
    expect(c.adminAddr).toBe('0.0.0.0:4191');
    expect(c.detectTimeoutMs).toBe(10_000);
    expect(c.headerReadTimeoutMs).toBe(30_000);
    expect(c.outboundDiscoveryIdleMs).toBe(5_000);
    expect(c.clusterDomain).toBe('cluster.local');
    expect(c.identity.plaintext).toBe(false);
    expect(c.identity.name).toBe(base.MINIMESH_PROXY_IDENTITY_SVC_NAME);
    expect(c.identity.addr).toBe('minimesh-identity-headless.minimesh.svc.cluster.local:8080');
  });

  it('takes short slowloris bounds and refuses a zero header read timeout', () => {
    const c = parseProxyConfig({
      ...base,
      MINIMESH_PROXY_DETECT_TIMEOUT: '300ms',
      MINIMESH_PROXY_HTTP1_HEADER_READ_TIMEOUT: '1s',
    });
    expect(c.detectTimeoutMs).toBe(300);
    expect(c.headerReadTimeoutMs).toBe(1000);
    expect(() => parseProxyConfig({ ...base, MINIMESH_PROXY_HTTP1_HEADER_READ_TIMEOUT: '0s' })).toThrow(
      /MINIMESH_PROXY_HTTP1_HEADER_READ_TIMEOUT.*above zero/,
    );
    expect(() => parseProxyConfig({ ...base, MINIMESH_PROXY_HTTP1_HEADER_READ_TIMEOUT: 'soon' })).toThrow(ConfigError);
  });

  it('a loopback control-plane address means plaintext and needs no name', () => {
    const c = parseProxyConfig({
      ...base,
      MINIMESH_PROXY_IDENTITY_SVC_ADDR: 'localhost.:8080',
      MINIMESH_PROXY_IDENTITY_SVC_NAME: '',
      MINIMESH_PROXY_DESTINATION_SVC_ADDR: '127.0.0.1:8086',
    });
    expect(c.identity.plaintext).toBe(true);
    expect(c.identity.addr).toBe('localhost:8080');
    expect(c.destination.plaintext).toBe(true);
  });

  it.each([
    [
      'MINIMESH_PROXY_IDENTITY_LOCAL_NAME',
      undefined,
      /MINIMESH_PROXY_IDENTITY_LOCAL_NAME: "" is not valid: expected this proxy's identity/,
    ],
    [
      'MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS',
      'not pem',
      /MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS: "not pem" is not valid: expected PEM/,
    ],
    [
      'MINIMESH_PROXY_IDENTITY_SVC_ADDR',
      'nope',
      /MINIMESH_PROXY_IDENTITY_SVC_ADDR: "nope" is not valid: expected host:port/,
    ],
    [
      'MINIMESH_PROXY_DESTINATION_SVC_NAME',
      '',
      /MINIMESH_PROXY_DESTINATION_SVC_NAME: "" is not valid: expected the identity of the service/,
    ],
    [
      'MINIMESH_PROXY_INBOUND_LISTEN_ADDR',
      '0.0.0.0:99999',
      /MINIMESH_PROXY_INBOUND_LISTEN_ADDR: "0.0.0.0:99999" is not valid/,
    ],
    [
      'MINIMESH_PROXY_DETECT_TIMEOUT',
      '10 parsecs',
      /MINIMESH_PROXY_DETECT_TIMEOUT: "10 parsecs" is not valid: expected a duration/,
    ],
    [
      'MINIMESH_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION',
      '25,x',
      /MINIMESH_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION: "x" is not valid/,
    ],
    ['MINIMESH_PROXY_LOG', 'loud', /MINIMESH_PROXY_LOG: "loud" is not valid/],
    [
      'MINIMESH_PROXY_SHUTDOWN_ENDPOINT_ENABLED',
      'maybe',
      /MINIMESH_PROXY_SHUTDOWN_ENDPOINT_ENABLED: "maybe" is not valid: expected true or false/,
    ],
    [
      'MINIMESH_PROXY_DESTINATION_CONTEXT',
      '{bad',
      /MINIMESH_PROXY_DESTINATION_CONTEXT: "\{bad" is not valid: expected JSON/,
    ],
  ])('%s=%j stops start-up with one line naming it', (name, value, message) => {
    const env: Record<string, string | undefined> = { ...base, [name]: value };
    let err: unknown;
    try {
      parseProxyConfig(env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain('\n');
  });
});

describe('listen addresses (IPv6)', () => {
  it('takes [::] and a comma-separated outbound list (127.0.0.1 and [::1])', () => {
    const cfg = parseProxyConfig({
      ...base,
      MINIMESH_PROXY_INBOUND_LISTEN_ADDR: '[::]:4143',
      MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: '127.0.0.1:4140,[::1]:4140',
    });
    expect(cfg.inboundAddr).toEqual({ host: '::', port: 4143 });
    expect(cfg.outboundAddr).toEqual({ host: '127.0.0.1', port: 4140 });
    expect(cfg.outboundExtraAddrs).toEqual([{ host: '::1', port: 4140 }]);
    expect(parseProxyConfig(base).outboundExtraAddrs).toEqual([]);
    expect(() => parseProxyConfig({ ...base, MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: '127.0.0.1:4140,[::1]' })).toThrow(
      /MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: "\[::1\]" is not valid/,
    );
  });
});

describe("the pod's own IPs (MINIMESH_PROXY_INBOUND_IPS)", () => {
  it('reads status.podIPs as canonical text, none when unset, and names a bad entry', () => {
    expect(parseProxyConfig(base).inboundIps).toEqual([]);
    const cfg = parseProxyConfig({ ...base, MINIMESH_PROXY_INBOUND_IPS: '10.42.0.7, FD00:0:0::7,::ffff:10.42.0.8' });
    expect(cfg.inboundIps).toEqual(['10.42.0.7', 'fd00::7', '10.42.0.8']);
    expect(() => parseProxyConfig({ ...base, MINIMESH_PROXY_INBOUND_IPS: '10.42.0.7,pod-a' })).toThrow(
      /MINIMESH_PROXY_INBOUND_IPS.*"pod-a" is not one/,
    );
  });
});
