import { describe, expect, it } from 'vitest';
import { toIpAddress, type tap } from '@minimesh/proto';
import { compileMatch, TapMatchError, type TapView } from './match.js';

const view: TapView = {
  source: { ip: '10.23.0.5', port: 40000 },
  destination: { ip: '10.23.0.7', port: 8080 },
  destinationLabels: { namespace: 'demo', deployment: 'server' },
  routeLabels: {},
  method: 'GET',
  scheme: 'http',
  authority: 'server.demo.svc.cluster.local:8080',
  path: '/api/items',
};
type M = tap.ObserveRequest_Match;
const http = (m: tap.ObserveRequest_Match_Http['match']): M => ({ match: { $case: 'http', value: { match: m } } });
const label = (key: string, value: string): M => ({ match: { $case: 'destinationLabel', value: { key, value } } });
const ports = (side: 'source' | 'destination', min: number, max: number): M => ({
  match: { $case: side, value: { match: { $case: 'ports', value: { min, max } } } },
});
const net = (side: 'source' | 'destination', ip: string, mask: number): M => ({
  match: { $case: side, value: { match: { $case: 'netmask', value: { ip: toIpAddress(ip), mask } } } },
});

describe('compileMatch', () => {
  it.each<[string, M | undefined, boolean]>([
    ['no match takes everything', undefined, true],
    ['path prefix', http({ $case: 'path', value: { match: { $case: 'prefix', value: '/api' } } }), true],
    ['path exact, other path', http({ $case: 'path', value: { match: { $case: 'exact', value: '/api' } } }), false],
    [
      'authority exact',
      http({ $case: 'authority', value: { match: { $case: 'exact', value: 'server.demo.svc.cluster.local:8080' } } }),
      true,
    ],
    ['method GET', http({ $case: 'method', value: { type: { $case: 'registered', value: 0 } } }), true],
    ['method POST', http({ $case: 'method', value: { type: { $case: 'registered', value: 1 } } }), false],
    [
      'method unregistered get',
      http({ $case: 'method', value: { type: { $case: 'unregistered', value: 'get' } } }),
      true,
    ],
    ['scheme https', http({ $case: 'scheme', value: { type: { $case: 'registered', value: 1 } } }), false],
    ['destination label', label('deployment', 'server'), true],
    ['destination label, other value', label('deployment', 'client'), false],
    ['route label (no routes)', { match: { $case: 'routeLabel', value: { key: 'route', value: 'x' } } }, false],
    ['destination port range', ports('destination', 8000, 8100), true],
    ['destination port, min only', ports('destination', 8080, 0), true],
    ['source port, max only', ports('source', 0, 39999), false],
    ['source in 10.23.0.0/16', net('source', '10.23.0.0', 16), true],
    ['source in 10.24.0.0/16', net('source', '10.24.0.0', 16), false],
    ['destination in an IPv6 net', net('destination', 'fd00::', 8), false],
    [
      'all of two',
      { match: { $case: 'all', value: { matches: [label('namespace', 'demo'), ports('destination', 8080, 8080)] } } },
      true,
    ],
    [
      'all, one fails',
      { match: { $case: 'all', value: { matches: [label('namespace', 'demo'), ports('destination', 1, 2)] } } },
      false,
    ],
    ['all of none', { match: { $case: 'all', value: { matches: [] } } }, true],
    ['any of none', { match: { $case: 'any', value: { matches: [] } } }, false],
    [
      'any, one holds',
      { match: { $case: 'any', value: { matches: [ports('destination', 1, 2), label('namespace', 'demo')] } } },
      true,
    ],
    ['not', { match: { $case: 'not', value: label('namespace', 'demo') } }, false],
  ])('%s → %s', (_name, m, want) => {
    expect(compileMatch(m)(view)).toBe(want);
  });

  it.each<[string, M]>([
    ['an empty match', {}],
    ['an empty http match', { match: { $case: 'http', value: {} } }],
    ['a netmask longer than the address', net('source', '10.0.0.0', 33)],
  ])('refuses %s', (_name, m) => {
    expect(() => compileMatch(m)).toThrow(TapMatchError);
  });
});
