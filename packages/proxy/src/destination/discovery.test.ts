// What discovery makes of a request or connection, with a fake resolver: a Service destination knows
// (at once when it has answered), the original destination's profile (its Service or its own endpoint),
// or the address itself; and where each one's outbound policy is looked up.
import { describe, expect, it } from 'vitest';
import { discovered, toAddr } from '../../test/support/stages.js';
import { createDiscovery, normalizeAuthority } from './discovery.js';
import { EndpointSet, type DestinationResolver, type Profile } from './resolver.js';

const WEB = 'web.shop.svc.cluster.local:80';
const web = new EndpointSet(WEB);
web.byKey.set('10.0.0.1:8080', discovered('10.0.0.1', 8080));
web.rebuild();
web.settle('ready');
const missing = new EndpointSet('nope.shop.svc.cluster.local:80');
missing.settle('missing');

const profiles: Record<string, Profile> = {
  '10.96.0.10:80': { fullyQualifiedName: 'web.shop.svc.cluster.local', opaqueProtocol: false, endpoint: undefined },
  '10.0.0.5:8080': { fullyQualifiedName: '', opaqueProtocol: false, endpoint: discovered('10.0.0.5', 8080) },
};
const resolver = {
  peekSet: (a: string) => (a === WEB ? web : undefined),
  resolve: async (a: string) => (a === WEB ? web : missing),
  profile: async (ip: string, port: number) => profiles[`${ip}:${port}`],
} as unknown as DestinationResolver;
const discovery = createDiscovery(resolver, 'cluster.local');

describe('discovery', () => {
  it('a Service destination has answered for is known at once, as the same target each time', () => {
    const a = discovery.httpNow('Web.Shop.svc.cluster.local.', toAddr('10.96.0.10', 80));
    expect(a).toMatchObject({
      authority: WEB,
      policy: { kind: 'authority', authority: WEB },
      concrete: { kind: 'balanced' },
    });
    expect(discovery.httpNow('web.shop.svc.cluster.local:80', undefined)).toBe(a);
    expect(discovery.httpNow('example.com', toAddr('93.184.216.34', 80))).toBeUndefined();
  });

  it('an unknown name falls back to the original destination: its Service, its endpoint, or itself', async () => {
    expect(await discovery.http('nope.shop.svc.cluster.local', toAddr('10.96.0.10', 80))).toMatchObject({
      authority: 'nope.shop.svc.cluster.local:80',
      concrete: { kind: 'balanced', set: web },
    });
    expect(await discovery.http('pod', toAddr('10.0.0.5', 8080))).toMatchObject({
      concrete: { kind: 'endpoint', endpoint: { key: '10.0.0.5:8080' } },
      policy: { kind: 'addr', ip: '10.0.0.5', port: 8080 },
    });
    expect(await discovery.http('example.com', toAddr('93.184.216.34', 80))).toMatchObject({
      authority: 'example.com:80',
      concrete: { kind: 'forward', endpoint: { key: '93.184.216.34:80', discovered: false } },
    });
  });

  it('without an original destination only an IP authority can be sent to', async () => {
    expect(await discovery.http('10.0.0.7:9000', undefined)).toMatchObject({
      concrete: { kind: 'forward' },
      policy: undefined,
    });
    await expect(discovery.http('example.com', undefined)).rejects.toMatchObject({
      code: 'MINIMESH_PROXY_NO_ORIGINAL_DST',
    });
  });

  it('an opaque connection is discovered by its original destination, named by it', async () => {
    expect(await discovery.tcp(toAddr('10.96.0.10', 80))).toMatchObject({
      authority: '10.96.0.10:80',
      concrete: { kind: 'balanced' },
    });
  });

  it('normalizes an authority: lower case, no trailing dot, an explicit port', () => {
    expect(normalizeAuthority('Web.Shop.svc.cluster.local.', 8080, 'cluster.local')).toEqual({
      host: 'web.shop.svc.cluster.local',
      port: 8080,
      text: 'web.shop.svc.cluster.local:8080',
      inCluster: true,
    });
    expect(normalizeAuthority('[fd00::1]:81', 80, 'cluster.local')).toMatchObject({
      text: '[fd00::1]:81',
      inCluster: false,
    });
    expect(normalizeAuthority('bad:port:x', 80, 'cluster.local')).toBeUndefined();
  });
});
