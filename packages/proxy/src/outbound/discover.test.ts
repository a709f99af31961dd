// The discover stage with a fake discovery and next stage: a known Service goes on at once, a new name
// after destination's answer, nothing to send to is refused.
import { describe, expect, it } from 'vitest';
import type { Discovery } from '../destination/discovery.js';
import { ProxyError } from '../errors.js';
import { balancedConcrete, FakeRequest, logicalOf, recorder, toAddr } from '../../test/support/stages.js';
import type { Accept, Logical } from '../targets.js';
import { pushDiscover } from './discover.js';

const KNOWN = logicalOf(balancedConcrete('web.shop.svc.cluster.local:80', []));
const NEW = logicalOf(balancedConcrete('api.shop.svc.cluster.local:80', []));
const conn = { direction: 'outbound', orig: toAddr('10.96.0.10', 80) } as Accept;

const discovery: Discovery = {
  httpNow: (host) => (host === 'web.shop.svc.cluster.local' ? KNOWN : undefined),
  http: (host) =>
    host === 'api.shop.svc.cluster.local'
      ? Promise.resolve(NEW)
      : Promise.reject(new ProxyError('MINIMESH_PROXY_NO_ORIGINAL_DST', `request for ${host}`)),
  tcp: () => Promise.reject(new Error('not for HTTP')),
};

describe('outbound discover', () => {
  it('a Service destination has answered for goes on synchronously', () => {
    const next = recorder<Logical, FakeRequest>();
    const req = new FakeRequest('web.shop.svc.cluster.local');
    pushDiscover(discovery)(next.next as never)(conn, req.asIncoming);
    expect(next.calls).toEqual([[KNOWN, req]]);
  });

  it('a new name goes on once destination answered', async () => {
    const next = recorder<Logical, FakeRequest>();
    const req = new FakeRequest('api.shop.svc.cluster.local');
    pushDiscover(discovery)(next.next as never)(conn, req.asIncoming);
    expect(next.calls).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(next.calls).toEqual([[NEW, req]]);
  });

  it('nothing to send it to: the request is refused with the error', async () => {
    const next = recorder<Logical, FakeRequest>();
    const req = new FakeRequest('example.com');
    pushDiscover(discovery)(next.next as never)(conn, req.asIncoming);
    await new Promise((r) => setImmediate(r));
    expect(next.calls).toEqual([]);
    expect(req.events).toEqual(['reject MINIMESH_PROXY_NO_ORIGINAL_DST']);
  });
});
