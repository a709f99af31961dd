// Route selection: the most specific match wins, as the Gateway API orders them.
import type { httpRoute } from '@minimesh/proto';
import { describe, expect, it } from 'vitest';
import {
  compileHosts,
  compileMatch,
  findRoute,
  pathHasPrefix,
  requestView,
  type CompiledRouteBase,
} from './http-match.js';

type M = httpRoute.HttpRouteMatch;
const prefix = (value: string, extra: Partial<M> = {}): M => ({
  path: { kind: { $case: 'prefix', value } },
  headers: [],
  queryParams: [],
  ...extra,
});
const exact = (value: string): M => ({ path: { kind: { $case: 'exact', value } }, headers: [], queryParams: [] });

function route(name: string, matches: M[], hosts: string[] = []): CompiledRouteBase & { name: string } {
  return {
    name,
    hosts: compileHosts(
      hosts.map((h) =>
        h.startsWith('*.')
          ? { match: { $case: 'suffix', value: { reverseLabels: h.slice(2).split('.').reverse() } } }
          : { match: { $case: 'exact', value: h } },
      ),
    ),
    rules: [{ matches: matches.map(compileMatch) }],
  };
}

const req = (path: string, opts: { method?: string; host?: string; headers?: Record<string, string> } = {}) =>
  requestView(opts.method ?? 'GET', path, opts.host ?? 'web.shop', (n) => opts.headers?.[n]);

describe('route selection', () => {
  const routes = [
    route('root', [prefix('/')]),
    route('api', [prefix('/api')]),
    route('api-v1', [prefix('/api/v1')]),
    route('login', [exact('/api/login')]),
    route('post-api', [prefix('/api', { method: { type: { $case: 'registered', value: 1 } } })]),
    route('blue', [
      prefix('/api', { headers: [{ name: 'X-Tenant', value: { $case: 'exact', value: Buffer.from('blue') } }] }),
    ]),
    route('regex', [{ path: { kind: { $case: 'regex', value: '/items/[0-9]+' } }, headers: [], queryParams: [] }]),
    route('query', [prefix('/search', { queryParams: [{ name: 'q', value: { $case: 'exact', value: 'a b' } }] })]),
    route('hosted', [prefix('/')], ['admin.example.com']),
    route('wild', [prefix('/')], ['*.example.com']),
  ];
  it.each([
    ['/', {}, 'root'],
    ['/api', {}, 'api'],
    ['/api/', {}, 'api'],
    ['/apix', {}, 'root'],
    ['/api/v1/users', {}, 'api-v1'],
    ['/api/login', {}, 'login'],
    ['/api/login?x=1', {}, 'login'],
    ['/api/users', { method: 'POST' }, 'post-api'],
    ['/api/users', { headers: { 'x-tenant': 'blue' } }, 'blue'],
    ['/items/42', {}, 'regex'],
    ['/items/42x', {}, 'root'],
    ['/search?q=a+b', {}, 'query'],
    ['/search?q=ab', {}, 'root'],
    ['/', { host: 'admin.example.com:8080' }, 'hosted'],
    ['/', { host: 'shop.example.com' }, 'wild'],
    ['/api', { host: 'example.com' }, 'api'],
  ] as const)('%s %j → %s', (path, opts, want) => {
    expect(findRoute(routes, req(path, opts))?.route.name).toBe(want);
  });

  it('nothing matches: undefined; a rule without matches matches everything', () => {
    expect(findRoute([route('api', [prefix('/api')])], req('/x'))).toBeUndefined();
    expect(findRoute([{ name: 'any', hosts: [], rules: [{ matches: [] }] }], req('/x'))?.route.name).toBe('any');
  });

  it('path prefixes are whole segments', () => {
    expect(pathHasPrefix('/api/x', '/api/')).toBe(true);
    expect(pathHasPrefix('/apix', '/api')).toBe(false);
    expect(pathHasPrefix('/anything', '/')).toBe(true);
  });
});
