import { describe, expect, it } from 'vitest';
import { formatPortRanges, parseCidr, parseDuration, parsePort, parsePortRanges } from './parse.js';
import { parseMeshConfig, defaultMeshConfig } from './mesh-config.js';
import { fromIdentityName, toIdentityName } from './identity-name.js';

describe('parsePortRanges', () => {
  it.each([
    ['4190,4191,4567,4568', '4190,4191,4567,4568'],
    ['443,6443,443', '443,6443'],
    ['5000-5010, 5005, 80', '80,5000-5010'],
    ['', ''],
  ])('%j → %j', (input, want) => {
    expect(formatPortRanges(parsePortRanges('--ports', input))).toBe(want);
  });

  it.each([
    ['0', '--ports: "0" is not valid: expected a TCP port number 1-65535'],
    ['70000', '--ports: "70000" is not valid: expected a TCP port number 1-65535'],
    ['10-5', 'a range whose start is not above its end (10 > 5)'],
    ['a-b', 'expected a port (e.g. 4190) or an inclusive range lo-hi'],
  ])('rejects %j', (input, message) => {
    expect(() => parsePortRanges('--ports', input)).toThrow(message);
  });
});

describe('scalars', () => {
  it('ports', () => {
    expect(parsePort('p', '4143')).toBe(4143);
    expect(() => parsePort('p', '-1')).toThrow('p: "-1" is not valid');
  });
  it('cidrs', () => {
    expect(parseCidr('s', '10.0.0.0/8')).toEqual({ address: '10.0.0.0', prefix: 8, family: 4 });
    expect(parseCidr('s', 'fd00::/8').family).toBe(6);
    expect(() => parseCidr('s', '10.0.0.0/33')).toThrow('expected a CIDR');
    expect(() => parseCidr('s', 'banana')).toThrow('s: "banana" is not valid: expected a CIDR');
  });
  it('durations', () => {
    expect(parseDuration('d', '24h')).toBe(86_400_000);
    expect(parseDuration('d', '1h30m')).toBe(5_400_000);
    expect(parseDuration('d', '500ms')).toBe(500);
    expect(() => parseDuration('d', '10 parsecs')).toThrow('expected a duration');
  });

  it.each([
    ['5m', 300_000],
    ['30s', 30_000],
    ['1m30s', 90_000],
    ['1h', 3_600_000],
    ['250ms', 250],
    ['0', 0],
  ])('duration %j is %s ms (as Go and Linkerd write them)', (text, ms) => expect(parseDuration('d', text)).toBe(ms));
  it.each(['5', 'm5', '', '0s5', '-1s'])('duration %j is refused', (text) =>
    expect(() => parseDuration('d', text)).toThrow('expected a duration'),
  );
});

describe('mesh config', () => {
  it('has Linkerd numbers by default', () => {
    const cfg = defaultMeshConfig();
    expect(cfg.proxy.ports).toEqual({ admin: 4191, control: 4190, inbound: 4143, outbound: 4140 });
    expect(cfg.proxy.uid).toBe(2102);
    expect(cfg.identityTrustDomain).toBe('cluster.local');
    expect(cfg.identity.address).toBe('minimesh-identity.minimesh.svc.cluster.local:8080');
    expect(cfg.proxyInit.kubeAPIServerPorts).toBe('443,6443');
  });
  it('names the bad field, its value and what was expected', () => {
    expect(() => parseMeshConfig({ proxy: { ports: { admin: 70000 } } })).toThrow(
      'proxy.ports.admin: 70000 is not valid: expected a value of at most 65535',
    );
    expect(() => parseMeshConfig({ proxyInit: { iptablesMode: 'iptables-who' } })).toThrow(
      'proxyInit.iptablesMode: "iptables-who" is not valid: expected one of nft, legacy, plain',
    );
    expect(() => parseMeshConfig({ proxy: { opaquePorts: '25,x' } })).toThrow('proxy.opaquePorts: "25,x" is not valid');
  });
  it('keeps unknown keys (the chart may pass more than we read)', () => {
    expect(
      (parseMeshConfig({ policyController: { logLevel: 'debug' } }) as Record<string, unknown>).policyController,
    ).toEqual({ logLevel: 'debug' });
  });
});

describe('identity names', () => {
  const parts = {
    serviceAccount: 'web',
    namespace: 'shop',
    controlPlaneNamespace: 'minimesh',
    trustDomain: 'cluster.local',
  };
  it('round-trips', () => {
    const name = toIdentityName(parts);
    expect(name).toBe('web.shop.serviceaccount.identity.minimesh.cluster.local');
    expect(fromIdentityName(name, parts)).toEqual({ serviceAccount: 'web', namespace: 'shop' });
  });
  it('refuses foreign names', () => {
    expect(fromIdentityName('web.shop.serviceaccount.identity.other.cluster.local', parts)).toBeUndefined();
    expect(fromIdentityName('a.b.web.shop.serviceaccount.identity.minimesh.cluster.local', parts)).toBeUndefined();
  });
});
