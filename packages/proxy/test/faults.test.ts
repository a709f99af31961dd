// Issue 17 item 2, the part that runs without a cluster: the control plane (destination and
// identity) goes away while traffic flows at a steady rate through client → outbound A → mTLS →
// inbound B → app, in-process on loopback. Like Linkerd, the proxies keep serving from what they
// already resolved and the certificates they hold: no request may fail. Every request is counted.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMeshedPair, WEB, type MeshedPair } from './support/meshed-pair.js';
import { steadyLoad } from './support/steady-load.js';

const RPS = 200;

let pair: MeshedPair;
let cp: MeshedPair['cp'];

beforeAll(async () => {
  pair = await startMeshedPair();
  cp = pair.cp;
}, 120_000);

afterAll(async () => {
  await pair?.close();
});

/** Sends RPS requests a second for `ms` through A; returns how many were sent and which failed. */
const load = (ms: number) => steadyLoad({ port: pair.a.ports.outbound, host: WEB, rps: RPS, ms });

describe('faults under load (in-process)', () => {
  it(`the control plane goes down at ${RPS} rps: no request fails`, async () => {
    const before = await load(3000);
    expect(before.failed).toEqual([]);
    const during = load(8000);
    await new Promise((r) => setTimeout(r, 1000));
    await cp.close(); // destination and identity gone, their streams cut
    // It is really gone: a new connection to its address is refused.
    const [host, port] = cp.addr.split(':') as [string, string];
    const refused = await new Promise<string>((resolve) => {
      const s = connect(Number(port), host, () => {
        s.destroy();
        resolve('connected');
      });
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    expect(refused).toBe('ECONNREFUSED');
    const r = await during;
    console.log(
      `control plane down 1 s into an 8 s run at ${RPS} rps: before ${before.sent} sent, 0 failed; run ${r.sent} sent, ${r.failed.length} failed`,
    );
    expect(r.sent).toBeGreaterThan(RPS * 6);
    expect(r.failed).toEqual([]);
  }, 60_000);
});
