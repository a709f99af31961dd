// The inbound admit stage with a fake next stage: only redirected connections that do not loop go on.
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ProxyMetrics } from '../metrics/metrics.js';
import { fakeSocket, targets, toAddr } from '../../test/support/stages.js';
import type { InboundAccept } from '../targets.js';
import { isLoop, pushAdmit } from './admit.js';

const log = createLogger({ name: 'test', level: 'silent' });

function admit(orig: ReturnType<typeof toAddr> | undefined) {
  const metrics = new ProxyMetrics(new Registry());
  const next = targets<InboundAccept>();
  const socket = fakeSocket('10.0.0.7');
  void pushAdmit({ proxyPorts: [4143, 4140, 4191], metrics, log })(next.next)({ direction: 'inbound', socket, orig });
  return { next, socket, metrics };
}

describe('inbound admit', () => {
  it('hands on a redirected connection: its original destination and the client address', () => {
    const { next, socket } = admit(toAddr('10.0.0.9', 8080));
    expect(next.seen).toEqual([{ socket, orig: toAddr('10.0.0.9', 8080), clientIp: '10.0.0.7' }]);
    expect(socket.destroyedBy).toEqual([]);
  });

  it.each([
    ['no original destination (not redirected)', undefined, 'MINIMESH_PROXY_NO_ORIGINAL_DST'],
    ["one of the proxy's own ports (it would loop)", toAddr('10.0.0.9', 4143), 'MINIMESH_PROXY_LOOP'],
  ])('resets and counts a connection with %s', async (_what, orig, code) => {
    const { next, socket, metrics } = admit(orig);
    expect(next.seen).toEqual([]);
    expect(socket.destroyedBy).toEqual(['reset']);
    expect(await metrics.registry.metrics()).toContain(`proxy_errors_total{direction="inbound",error="${code}"} 1`);
  });

  it('a loop is an original destination on a proxy port', () => {
    expect(isLoop({ port: 4191 }, [4143, 4191])).toBe(true);
    expect(isLoop({ port: 8080 }, [4143, 4191])).toBe(false);
    expect(isLoop(undefined, [4143])).toBe(false);
  });
});
