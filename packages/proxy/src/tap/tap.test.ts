import { describe, expect, it } from 'vitest';
import { fromTcpAddress, type tap } from '@minimesh/proto';
import type { TapView } from './match.js';
import { TapLayer } from './tap.js';

const view = (path: string): TapView => ({
  source: { ip: '10.23.0.5', port: 40000 },
  destination: { ip: '10.23.0.7', port: 8080 },
  destinationLabels: {},
  routeLabels: {},
  method: 'POST',
  scheme: 'http',
  authority: 'server:8080',
  path,
});
const meta = { direction: 'inbound' as const, sourceLabels: { tls: 'true', client_id: 'c' }, destinationLabels: {} };
const prefix = (value: string): tap.ObserveRequest['match'] => ({
  match: { $case: 'http', value: { match: { $case: 'path', value: { match: { $case: 'prefix', value } } } } },
});

describe('TapLayer', () => {
  it('is inactive until a tap registers, and again once every tap took its limit', () => {
    const layer = new TapLayer();
    expect(layer.active).toBe(false);
    let notified = 0;
    const t = layer.register({ limit: 2 }, () => notified++);
    expect(layer.active).toBe(true);
    const a = layer.start(view('/a'), meta)!;
    const b = layer.start(view('/b'), meta)!;
    expect(layer.active).toBe(false);
    expect(layer.start(view('/c'), meta)).toBeUndefined();
    expect(t.complete).toBe(false);
    a.responseInit(200);
    a.responseEnd({});
    b.responseInit(503);
    b.responseEnd({ grpcStatus: 14 });
    expect(t.complete).toBe(true);
    const events = t.drain();
    expect(events.map((e) => (e.event?.$case === 'http' ? e.event.value.event?.$case : ''))).toEqual([
      'requestInit',
      'requestInit',
      'responseInit',
      'responseEnd',
      'responseInit',
      'responseEnd',
    ]);
    const first = events[0]!;
    expect(fromTcpAddress(first.source)).toEqual({ ip: '10.23.0.5', port: 40000 });
    expect(first.sourceMeta?.labels).toEqual({ tls: 'true', client_id: 'c' });
    const init =
      first.event?.$case === 'http' && first.event.value.event?.$case === 'requestInit'
        ? first.event.value.event.value
        : undefined;
    expect(init).toMatchObject({
      authority: 'server:8080',
      path: '/a',
      method: { type: { $case: 'registered', value: 1 } },
    });
    expect(init?.id?.base).toBe(layer.base);
    const end = events[5]!;
    expect(
      end.event?.$case === 'http' && end.event.value.event?.$case === 'responseEnd'
        ? end.event.value.event.value.eos
        : undefined,
    ).toEqual({
      end: { $case: 'grpcStatusCode', value: 14 },
    });
    expect(notified).toBeGreaterThan(0);
  });

  it('gives a request only to the taps whose match takes it, with one stream id', () => {
    const layer = new TapLayer();
    const api = layer.register({ limit: 10, match: prefix('/api') }, () => undefined);
    const all = layer.register({ limit: 10 }, () => undefined);
    layer.start(view('/api/x'), meta)?.responseEnd({});
    layer.start(view('/health'), meta)?.responseEnd({});
    expect(api.drain()).toHaveLength(2);
    expect(all.drain()).toHaveLength(4);
    layer.unregister(api);
    layer.unregister(all);
    expect(layer.active).toBe(false);
  });

  it('drops events beyond the buffer and counts them', () => {
    const layer = new TapLayer(3);
    const t = layer.register({ limit: 5 }, () => undefined);
    for (let i = 0; i < 5; i++) layer.start(view('/'), meta)?.responseEnd({});
    expect(t.queued).toBe(3);
    expect(t.dropped).toBe(7);
    expect(t.complete).toBe(true);
  });
});
