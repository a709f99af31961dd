import { describe, expect, it } from 'vitest';
import type { DestinationError } from '../errors.js';
import { parseAuthority, parseContextToken, parseServiceAuthority } from './authority.js';

describe('parseAuthority', () => {
  it.each([
    ['web.shop.svc.cluster.local:8080', { kind: 'service', service: 'web', namespace: 'shop', port: 8080 }],
    ['web.shop.svc.cluster.local', { kind: 'service', service: 'web', namespace: 'shop', port: 80 }],
    ['WEB.shop.svc.cluster.local.:80', { kind: 'service', service: 'web', namespace: 'shop', port: 80 }],
    [
      'pg-1.pg.db.svc.cluster.local:5432',
      { kind: 'service', hostname: 'pg-1', service: 'pg', namespace: 'db', port: 5432 },
    ],
    ['10.0.0.1:8080', { kind: 'ip', ip: '10.0.0.1', port: 8080 }],
    ['[fd00::1]:80', { kind: 'ip', ip: 'fd00::1', port: 80 }],
  ])('%s', (authority, want) => {
    expect(parseAuthority(authority, 'cluster.local')).toEqual(want);
  });

  it.each([
    ['', 'it is empty'],
    ['web.shop.svc.cluster.local:0', 'port "0"'],
    ['web.shop.svc.cluster.local:70000', 'port "70000"'],
    ['web.shop.svc.cluster.local:http', 'port "http"'],
    ['example.com:443', 'not a name in the cluster domain cluster.local'],
    ['web.svc.cluster.local:80', 'has 1 name labels'],
    ['a.b.c.d.svc.cluster.local:80', 'has 4 name labels'],
    ['we_b.shop.svc.cluster.local:80', 'not made of DNS labels'],
  ])('rejects %j (%s) naming the expected forms', (authority, why) => {
    const err = (() => {
      try {
        parseAuthority(authority, 'cluster.local');
      } catch (e) {
        return e as DestinationError;
      }
      return undefined;
    })();
    expect(err?.code).toBe('MINIMESH_DESTINATION_INVALID_AUTHORITY');
    expect(err?.message).toContain(why);
    expect(err?.message).toContain(
      'expected <service>.<namespace>.svc.cluster.local[:<port>] or <hostname>.<service>.<namespace>.svc.cluster.local[:<port>]',
    );
  });

  it('Get refuses IP queries and says what to use', () => {
    expect(() => parseServiceAuthority('10.0.0.1:80', 'cluster.local')).toThrow(
      /IP queries are not supported by Get; expected <service>/,
    );
    expect(() => parseServiceAuthority('10.0.0.1:80', 'cluster.local')).toThrow(
      expect.objectContaining({ code: 'MINIMESH_DESTINATION_IP_QUERY' }),
    );
  });

  it('honours another cluster domain', () => {
    expect(parseAuthority('web.shop.svc.example.org:80', 'example.org')).toMatchObject({ service: 'web' });
    expect(() => parseAuthority('web.shop.svc.cluster.local:80', 'example.org')).toThrow(/cluster domain example.org/);
  });
});

describe('parseContextToken', () => {
  it.each([
    ['{"ns":"shop","nodeName":"node-1","pod":"web-0"}', { ns: 'shop', nodeName: 'node-1', pod: 'web-0' }],
    ['ns:shop', { ns: 'shop' }],
    ['', {}],
    ['not json', {}],
    ['{"ns":3}', {}],
  ])('%j', (token, want) => expect(parseContextToken(token)).toEqual(want));
});
