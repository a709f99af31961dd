import { defaultMeshConfig } from '@minimesh/config';
import { describe, expect, it } from 'vitest';
import { OVERRIDE_NAMES, parseOverride, resolveSettings } from './overrides.js';

const config = defaultMeshConfig();

describe('parseOverride', () => {
  it.each([
    ['proxy-image', 'registry.local:5000/mesh/proxy', 'registry.local:5000/mesh/proxy'],
    ['proxy-version', 'v1.2.3-rc.1', 'v1.2.3-rc.1'],
    [
      'skip-inbound-ports',
      '9000-9010, 8081',
      [
        { lo: 8081, hi: 8081 },
        { lo: 9000, hi: 9010 },
      ],
    ],
    ['skip-subnets', '10.0.0.0/8,fd00::/8', ['10.0.0.0/8', 'fd00::/8']],
    ['proxy-uid', '2103', 2103],
    ['proxy-log-level', 'DEBUG', 'debug'],
    ['proxy-cpu-limit', '1.5', '1.5'],
    ['proxy-memory-request', '64Mi', '64Mi'],
    ['proxy-enable-native-sidecar', 'false', false],
  ] as const)('%s accepts %j', (name, value, expected) => {
    expect(parseOverride(name, value)).toEqual(expected);
  });

  it.each([
    ['proxy-image', 'ghcr.io/minimesh/proxy:1.0', /without tag or digest/],
    ['proxy-image', 'ghcr.io/minimesh/proxy@sha256:abc', /without tag or digest/],
    ['proxy-version', 'has space', /image tag/],
    ['skip-outbound-ports', '0', /TCP port number/],
    ['skip-subnets', '10.0.0.0/40', /CIDR/],
    ['proxy-uid', '0', /non-root user id/],
    ['proxy-uid', '-5', /non-root user id/],
    ['proxy-log-level', 'chatty', /one of trace/],
    ['opaque-ports', 'db', /container ports/],
    ['proxy-memory-limit', '1 gig', /Kubernetes quantity/],
    ['proxy-enable-native-sidecar', 'sometimes', /true or false/],
  ] as const)('%s rejects %j naming the annotation', (name, value, expected) => {
    expect(() => parseOverride(name, value)).toThrow(expected);
    expect(() => parseOverride(name, value)).toThrow(`config.minimesh.io/${name}:`);
  });

  it("resolves opaque-ports names against the pod's container ports", () => {
    expect(parseOverride('opaque-ports', 'db,25', { namedPorts: new Map([['db', 5432]]) })).toEqual([
      { lo: 25, hi: 25 },
      { lo: 5432, hi: 5432 },
    ]);
  });

  it('covers every override the issue lists', () => {
    expect([...OVERRIDE_NAMES].sort()).toEqual([
      'default-inbound-policy',
      'opaque-ports',
      'proxy-cpu-limit',
      'proxy-cpu-request',
      'proxy-enable-native-sidecar',
      'proxy-image',
      'proxy-log-level',
      'proxy-memory-limit',
      'proxy-memory-request',
      'proxy-uid',
      'proxy-version',
      'skip-inbound-ports',
      'skip-outbound-ports',
      'skip-subnets',
    ]);
  });
});

describe('resolveSettings', () => {
  const base = { config, containers: [] };

  it('takes flags over the pod over the namespace over the config', () => {
    const key = 'config.minimesh.io/proxy-log-level';
    expect(resolveSettings({ ...base, podAnnotations: {}, namespaceAnnotations: {} }).settings.logLevel).toBe('info');
    expect(
      resolveSettings({ ...base, podAnnotations: {}, namespaceAnnotations: { [key]: 'warn' } }).settings.logLevel,
    ).toBe('warn');
    expect(
      resolveSettings({ ...base, podAnnotations: { [key]: 'debug' }, namespaceAnnotations: { [key]: 'warn' } }).settings
        .logLevel,
    ).toBe('debug');
    expect(
      resolveSettings({
        ...base,
        podAnnotations: { [key]: 'debug' },
        namespaceAnnotations: {},
        overrides: { 'proxy-log-level': 'trace' },
      }).settings.logLevel,
    ).toBe('trace');
  });

  it('falls back past a malformed value and says so', () => {
    const key = 'config.minimesh.io/proxy-uid';
    const r = resolveSettings({ ...base, podAnnotations: { [key]: 'abc' }, namespaceAnnotations: { [key]: '3000' } });
    expect(r.settings.proxyUid).toBe(3000);
    expect(r.warnings).toEqual([
      'config.minimesh.io/proxy-uid: "abc" is not valid: expected a non-root user id 1-2147483647 (pod annotation ignored; using "3000")',
    ]);
    const both = resolveSettings({ ...base, podAnnotations: { [key]: 'abc' }, namespaceAnnotations: { [key]: 'def' } });
    expect(both.settings.proxyUid).toBe(2102);
    expect(both.warnings).toHaveLength(2);
    expect(both.warnings[1]).toMatch(/namespace annotation ignored; using "2102"/);
  });
});
