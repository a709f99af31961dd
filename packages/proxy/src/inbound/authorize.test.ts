// The inbound authorize stage with a fake authorization and next stage: an admitted request goes on as
// Authorized (its route's filters with it), a refused one is answered 403 / 404 / 500.
import { describe, expect, it } from 'vitest';
import type { InboundAuthz, RequestVerdict } from '../policy/inbound-authz.js';
import { FakeRequest, inboundConn, recorder } from '../../test/support/stages.js';
import type { Authorized } from '../targets.js';
import { pushAuthorize } from './authorize.js';

const FILTERS = [
  { kind: 'requestHeaders' as const, add: [], set: [['x-route', 'web'] as [string, string]], remove: [] },
];

function authz(verdict: (path: string) => RequestVerdict): InboundAuthz & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    policy: () => {
      throw new Error('not asked here');
    },
    admitConnection: () => true,
    checkRequest: (conn, req) => {
      asked.push(`${conn.clientId} ${conn.targetPort} ${req.method} ${req.path} ${req.header('x-h')}`);
      return verdict(req.path);
    },
    checkRateLimit: () => {
      throw new Error('not asked here');
    },
  };
}

const byPath = (path: string): RequestVerdict => {
  if (path === '/ok') return { kind: 'allow', filters: FILTERS };
  if (path === '/deny') return { kind: 'respond', status: 403, grpcStatus: 7, message: 'unauthorized request' };
  if (path === '/none') return { kind: 'respond', status: 404, grpcStatus: 5, message: 'no route found for request' };
  return { kind: 'respond', status: 500, grpcStatus: 13, message: 'invalid server policy: x' };
};

describe('inbound authorize', () => {
  it('an admitted request goes on with its connection and its route filters', () => {
    const a = authz(byPath);
    const next = recorder<Authorized, unknown>();
    const conn = inboundConn();
    const req = new FakeRequest('web', { method: 'POST', path: '/ok', headers: { 'x-h': ['1', '2'] } });
    pushAuthorize(a)(next.next)(conn, req.asIncoming);
    expect(next.calls).toEqual([[{ conn, filters: FILTERS }, req]]);
    expect(a.asked).toEqual([`${conn.clientId} 8080 POST /ok 1,2`]);
  });

  it.each([
    ['/deny', 'MINIMESH_PROXY_UNAUTHORIZED'],
    ['/none', 'MINIMESH_PROXY_ROUTE_NOT_FOUND'],
    ['/broken', 'MINIMESH_PROXY_INVALID_POLICY'],
  ])('a request on %s is answered with %s and goes no further', (path, code) => {
    const next = recorder<Authorized, unknown>();
    const req = new FakeRequest('web', { path });
    pushAuthorize(authz(byPath))(next.next)(inboundConn(), req.asIncoming);
    expect(req.events).toEqual([`fail ${code}`]);
    expect(next.calls).toEqual([]);
  });

  it('an HTTP/1 Upgrade is checked the same way', () => {
    const req = new FakeRequest('web', { path: '/deny', upgrade: true });
    pushAuthorize(authz(byPath))(recorder<Authorized, unknown>().next)(inboundConn(), req.asIncoming);
    expect(req.events).toEqual(['fail MINIMESH_PROXY_UNAUTHORIZED']);
  });

  it('without policies every request is admitted, with one target per connection', () => {
    const next = recorder<Authorized, unknown>();
    const handler = pushAuthorize(undefined)(next.next);
    const conn = inboundConn();
    handler(conn, new FakeRequest('web').asIncoming);
    handler(conn, new FakeRequest('web').asIncoming);
    expect(next.calls[0]![0]).toEqual({ conn, filters: [] });
    expect(next.calls[1]![0]).toBe(next.calls[0]![0]);
  });
});
