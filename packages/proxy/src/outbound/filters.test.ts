// Route filters as pure functions: header edits, redirects (Location per the Gateway API), rewrites of
// the host and of the whole path or the matched prefix, response edits.
import type { CompiledRouteFilter } from '@minimesh/policy/client';
import { describe, expect, it } from 'vitest';
import { FakeRequest } from '../../test/support/stages.js';
import { applyFilters, editHeaders, matchedPrefix, redirectLocation, replacePath, responseEditor } from './filters.js';

type Redirect = Extract<CompiledRouteFilter, { kind: 'redirect' }>;
const req = (authority: string, path: string, scheme: 'http' | 'https' = 'http') => ({ authority, path, scheme });

describe('header edits', () => {
  it('add appends to a present value, set replaces, remove drops (names lower-case)', () => {
    const h: Record<string, string | string[] | undefined> = { 'x-a': '1', 'x-b': ['1', '2'], 'x-drop': 'y' };
    editHeaders(h, {
      add: [
        ['x-a', '2'],
        ['x-b', '3'],
        ['x-new', 'n'],
      ],
      set: [['x-set', 's']],
      remove: ['x-drop'],
    });
    expect(h).toEqual({ 'x-a': '1,2', 'x-b': '1,2,3', 'x-new': 'n', 'x-set': 's' });
  });
});

describe('paths', () => {
  it('the longest prefix that covers the path by whole segments', () => {
    expect(matchedPrefix(['/', '/api', '/api/v1/'], '/api/v1/x')).toBe('/api/v1');
    expect(matchedPrefix(['/api'], '/apix')).toBeUndefined();
    expect(matchedPrefix(['/'], '/x')).toBe('/');
  });

  it.each([
    ['/prefix/one', '/prefix', '/one', '/one/one'],
    ['/prefix/one', '/prefix', '/', '/one'],
    ['/prefix', '/prefix', '/one', '/one'],
    ['/prefix/', '/prefix', '/one', '/one/'],
    ['/prefix/one', '/prefix', '', '/one'],
    ['/x/y', '/', '/one', '/one/x/y'],
  ])('%s under prefix %s replaced by %s: %s', (path, prefix, value, out) => {
    expect(replacePath(path, { kind: 'prefix', value }, prefix)).toBe(out);
  });

  it('a full replacement replaces the whole path', () => {
    expect(replacePath('/a/b', { kind: 'full', value: '/one' }, '/a')).toBe('/one');
  });
});

describe('redirect Location', () => {
  const redirect = (over: Partial<Redirect>): Redirect => ({ kind: 'redirect', status: 302, ...over });

  it("keeps the request's scheme, host, port and path unless the filter replaces them", () => {
    expect(redirectLocation(redirect({ host: 'example.org' }), req('echo:8080', '/a?q=1'), [])).toBe(
      'http://example.org:8080/a?q=1',
    );
    expect(redirectLocation(redirect({ host: 'example.org' }), req('echo', '/a'), [])).toBe('http://example.org/a');
  });

  it("a new scheme without a port takes the scheme's well-known port, left out of Location", () => {
    expect(redirectLocation(redirect({ scheme: 'https' }), req('echo:8080', '/a'), [])).toBe('https://echo/a');
    expect(redirectLocation(redirect({ scheme: 'https', port: 8443 }), req('echo', '/a'), [])).toBe(
      'https://echo:8443/a',
    );
    expect(redirectLocation(redirect({ port: 80 }), req('echo:8080', '/a'), [])).toBe('http://echo/a');
  });

  it('replaces the full path or the matched prefix, keeping the query', () => {
    const full = redirect({ path: { kind: 'full', value: '/new' } });
    expect(redirectLocation(full, req('echo', '/old/x?q'), ['/old'])).toBe('http://echo/new?q');
    const prefix = redirect({ path: { kind: 'prefix', value: '/new' } });
    expect(redirectLocation(prefix, req('echo', '/old/x'), ['/old'])).toBe('http://echo/new/x');
  });
});

describe('applyFilters', () => {
  it('edits and rewrites in order, collects response edits; a redirect ends it', () => {
    const r = new FakeRequest('echo:80', { path: '/api/x?q=1', headers: { 'x-drop': '1' } });
    const filters: CompiledRouteFilter[] = [
      { kind: 'requestHeaders', edit: { add: [], set: [['x-set', '1']], remove: ['x-drop'] } },
      { kind: 'rewrite', host: 'api.internal', path: { kind: 'prefix', value: '/v2' } },
      { kind: 'responseHeaders', edit: { add: [['x-resp', 'r']], set: [], remove: [] } },
    ];
    const v = applyFilters(filters, r, ['/api']);
    expect(r.headers).toEqual({ 'x-set': '1' });
    expect(r.authority).toBe('api.internal');
    expect(r.path).toBe('/v2/x?q=1');
    expect(v.kind).toBe('continue');
    const head: Record<string, string> = { 'x-resp': 'a' };
    if (v.kind === 'continue') responseEditor(v.response)(head);
    expect(head).toEqual({ 'x-resp': 'a,r' });

    const redirected = applyFilters(
      [{ kind: 'redirect', status: 301, host: 'example.org' }, ...filters],
      new FakeRequest('echo:80', { path: '/' }),
      [],
    );
    expect(redirected).toEqual({ kind: 'redirect', status: 301, location: 'http://example.org/' });
  });
});
