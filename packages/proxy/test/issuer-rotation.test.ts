// Issue 17 item 2 / issue 15 item 2, in-process: the issuer is rotated (a new issuer from the same root,
// same name, new key, as `minimesh certs create --ca`) while traffic flows at 200 rps through client →
// outbound A → mTLS → inbound B → app; leaves live 14 s, so both proxies renew from the new issuer
// during the run. No request may fail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMeshedPair, WEB, type MeshedPair } from './support/meshed-pair.js';
import { steadyLoad } from './support/steady-load.js';

const RPS = 200;

let pair: MeshedPair;
let cp: MeshedPair['cp'];
let rotate: () => Promise<void>;

beforeAll(async () => {
  pair = await startMeshedPair({ leafLifetimeMs: 14_000 });
  cp = pair.cp;
  rotate = () => pair.pki.rotateIssuer();
}, 120_000);

afterAll(async () => {
  await pair?.close();
});

/** Sends RPS requests a second for `ms` through A; returns how many were sent and which failed. */
const load = (ms: number) => steadyLoad({ port: pair.a.ports.outbound, host: WEB, rps: RPS, ms });

describe('issuer rotation under load (in-process)', () => {
  it(`the issuer is rotated at ${RPS} rps and both proxies renew from it: no request fails`, async () => {
    const calls = cp.identity.calls;
    const during = load(16_000);
    await new Promise((r) => setTimeout(r, 2000));
    await rotate();
    const r = await during;
    const renewals = cp.identity.calls - calls;
    console.log(
      `issuer rotated 2 s into a 16 s run at ${RPS} rps: ${r.sent} sent, ${r.failed.length} failed, ${renewals} renewals`,
    );
    for (const f of r.failed.slice(0, 10)) console.log(`  ${f.i}: ${f.why}`);
    expect(renewals).toBeGreaterThanOrEqual(2);
    expect(r.failed).toEqual([]);
  }, 60_000);
});
