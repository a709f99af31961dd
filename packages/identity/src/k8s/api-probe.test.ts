import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@minimesh/runtime';
import { startApiProbe } from './api-probe.js';

async function eventually(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('startApiProbe', () => {
  it('follows the probe, logs each transition once, and counts a good TokenReview as reachable', async () => {
    let up = false;
    let text = '';
    const out = new PassThrough();
    out.on('data', (d) => (text += String(d)));
    const probe = startApiProbe({
      probe: async () => {
        if (!up) throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
      },
      logger: createLogger({ name: 't', format: 'json', destination: out }),
      intervalMs: 20,
    });
    try {
      await new Promise((r) => setTimeout(r, 60));
      expect(probe.reachable()).toBe(false);
      up = true;
      await eventually(() => probe.reachable(), 'reachable');
      up = false;
      await eventually(() => !probe.reachable(), 'unreachable');
      probe.markReachable();
      expect(probe.reachable()).toBe(true);
      // Starting unreachable is not a transition; up and down are logged once each, plus the mark.
      expect(text.match(/API server reachable/g)).toHaveLength(2);
      expect(text.match(/API server unreachable/g)).toHaveLength(1);
      expect(text).toContain('ECONNREFUSED');
    } finally {
      probe.stop();
    }
  });
});
