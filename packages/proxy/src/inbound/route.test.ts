// The inbound route stage with a fake next stage: the filters of an Authorized request's route edit its
// headers, redirect it or fail it; an Upgrade and a request without filters go on as they are.
import type { InboundRouteFilter } from '@minimesh/policy/client';
import { describe, expect, it } from 'vitest';
import { FakeRequest, inboundConn, recorder } from '../../test/support/stages.js';
import type { Authorized } from '../targets.js';
import { pushRoute } from './route.js';

function run(filters: InboundRouteFilter[], req: FakeRequest) {
  const next = recorder<Authorized, unknown>();
  const target: Authorized = { conn: inboundConn(), filters };
  pushRoute()(next.next)(target, req.asIncoming);
  return { next, target };
}

describe('inbound route', () => {
  it('edits the headers as the filters say and hands the request on', () => {
    const req = new FakeRequest('web', { headers: { 'x-drop': '1', 'x-keep': 'a' } });
    const { next, target } = run(
      [{ kind: 'requestHeaders', add: [['x-keep', 'b']], set: [['x-set', 'v']], remove: ['x-drop'] }],
      req,
    );
    expect(req.headers).toEqual({ 'x-keep': ['a', 'b'], 'x-set': 'v' });
    expect(next.calls).toEqual([[target, req]]);
  });

  it('a redirect answers the request with its status and location', () => {
    const req = new FakeRequest('web.shop:8080', { path: '/old' });
    const { next } = run(
      [
        {
          kind: 'redirect',
          redirect: {
            value: { host: 'new.shop', port: 0, status: 302, path: { replace: { $case: 'full', value: '/new' } } },
          },
        } as never,
      ],
      req,
    );
    expect(req.events).toEqual(['answer 302 redirected http://new.shop/new']);
    expect(next.calls).toEqual([]);
  });

  it('an injected failure answers with its status', () => {
    const req = new FakeRequest('web');
    run([{ kind: 'fail', ratio: 1, status: 503, message: 'injected' } as never], req);
    expect(req.events).toEqual(['answer 503 injected']);
  });

  it('an HTTP/1 Upgrade takes no filters', () => {
    const req = new FakeRequest('web', { upgrade: true });
    const { next } = run([{ kind: 'fail', ratio: 1, status: 503, message: 'injected' } as never], req);
    expect(next.calls).toHaveLength(1);
    expect(req.events).toEqual([]);
  });
});
