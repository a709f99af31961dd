// Issue 17 item 2 / issue 15 item 2, in-process: the issuer is rotated (a new issuer from the same root,
// same name, new key, as `minimesh certs create --ca`) while traffic flows at 200 rps through client →
// outbound A → mTLS → inbound B → app; leaves live 14 s, so both proxies renew from the new issuer
// during the run. No request may fail.
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProxy } from '../src/index.js';
import { h1Echo, listen } from './support/apps.js';
import { startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { removeTempDirs, startHarnessProxy } from './support/harness.js';
import { createTestPki } from './support/pki.js';

const A_ID = 'client.default.serviceaccount.identity.minimesh.cluster.local';
const B_ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
const WEB = 'web.default.svc.cluster.local';
const RPS = 200;

let cp: FakeControlPlane;
let rotate: () => Promise<void>;
let a: RunningProxy;
let b: RunningProxy;
const closers: Array<{ close(): unknown }> = [];

beforeAll(async () => {
  const pki = await createTestPki();
  cp = await startFakeControlPlane(pki);
  cp.identity.lifetimeMs = 14_000;
  rotate = () => pki.rotateIssuer();
  const web = h1Echo('web');
  closers.push(web);
  const webPort = await listen(web);
  b = await startHarnessProxy({
    identity: B_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    inbound: () => ({ ip: '127.0.0.1', port: webPort }),
  });
  a = await startHarnessProxy({
    identity: A_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    outbound: () => ({ ip: '10.96.0.80', port: 80 }),
  });
  cp.destination.set(`${WEB}:80`, [{ ip: '127.0.0.1', port: b.ports.inbound, identity: B_ID }]);
  cp.destination.profiles.set('10.96.0.80:80', { fullyQualifiedName: WEB });
  await Promise.all([a.ready, b.ready]);
}, 120_000);

afterAll(async () => {
  await a?.shutdown(100);
  await b?.shutdown(100);
  for (const c of closers) c.close();
  await cp?.close();
  removeTempDirs();
});

/** Sends RPS requests a second for `ms` through A; returns how many were sent and which failed. */
async function load(ms: number): Promise<{ sent: number; failed: string[] }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const failed: string[] = [];
  const pending: Promise<void>[] = [];
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const req = request(
        { host: '127.0.0.1', port: a.ports.outbound, path: `/r${i}`, headers: { host: WEB }, agent, timeout: 5000 },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode !== 200)
              failed.push(`${i}: HTTP ${res.statusCode} ${String(res.headers['x-minimesh-proxy-error'] ?? '')}`);
            resolve();
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (e) => {
        failed.push(`${i}: ${e.message}`);
        resolve();
      });
      req.end();
    });
  const t0 = Date.now();
  let i = 0;
  while (Date.now() - t0 < ms) {
    const due = Math.floor(((Date.now() - t0) * RPS) / 1000);
    while (i < due) pending.push(one(i++));
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all(pending);
  agent.destroy();
  return { sent: i, failed };
}

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
    for (const f of r.failed.slice(0, 10)) console.log(`  ${f}`);
    expect(renewals).toBeGreaterThanOrEqual(2);
    expect(r.failed).toEqual([]);
  }, 60_000);
});
