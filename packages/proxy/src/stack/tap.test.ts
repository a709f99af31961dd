// The tap layer with a real TapLayer and a fake next stage: absent without a tap server, one boolean
// while nobody taps, and a tapped request observed (with the connect stage's labels) while a tap matches.
import { tap as tapApi } from '@minimesh/proto';
import { describe, expect, it } from 'vitest';
import type { Connected } from '../http/upstream.js';
import { TapLayer } from '../tap/tap.js';
import { FakeRequest, recorder } from '../../test/support/stages.js';
import { pushTap } from './tap.js';

const TARGET = {
  labels: { target_addr: '10.0.0.1:8080', tls: 'true', server_id: 'web.shop', dst_pod: 'web-0' },
  authority: 'web:80',
  extra: undefined,
} as unknown as Connected;

describe('tap layer', () => {
  it('is not in the chain at all without a tap server', () => {
    const next = recorder<Connected, FakeRequest>();
    expect(pushTap<FakeRequest>({ tap: undefined, direction: 'outbound' })(next.next)).toBe(next.next);
  });

  it('while nobody taps, only hands the request on', () => {
    const next = recorder<Connected, FakeRequest>();
    const req = new FakeRequest('web:80');
    pushTap<FakeRequest>({ tap: new TapLayer(), direction: 'outbound' })(next.next)(TARGET, req);
    expect(req.events).toEqual([]);
    expect(next.calls).toEqual([[TARGET, req]]);
  });

  it('offers the request to a tap that matches, which then observes it; Upgrades are not observed', () => {
    const layer = new TapLayer();
    const t = layer.register(tapApi.ObserveRequest.fromPartial({ limit: 10, match: undefined }), () => undefined);
    const next = recorder<Connected, FakeRequest>();
    const handler = pushTap<FakeRequest>({ tap: layer, direction: 'outbound' })(next.next);
    const req = new FakeRequest('web:80', { method: 'GET', path: '/x' });
    handler(TARGET, req);
    expect(req.events).toEqual(['observe']);
    expect(req.observer).toBeDefined();
    expect(t.drain()[0]?.event?.value).toMatchObject({ event: { $case: 'requestInit', value: { path: '/x' } } });
    const upgrade = new FakeRequest('web:80', { upgrade: true });
    handler(TARGET, upgrade);
    expect(upgrade.events).toEqual([]);
    expect(next.calls).toHaveLength(2);
  });
});
