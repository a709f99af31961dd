// Issue 17 item 2, a killed endpoint, in-process on loopback: client → outbound A → mTLS → two
// endpoints (inbound B1 and B2, each in front of an app answering in 50 ms) at 200 requests a second.
// B1 is "killed" as SIGKILL kills a pod: every connection to it is reset and new ones are refused, while
// destination still lists it (it takes the kubelet and the API server a second or more to notice). Like
// Linkerd's balancer, which only sends to endpoints whose connection is up and reconnects in the
// background, only the requests already in flight on B1 may fail: none sent after the kill.
import { createServer } from 'node:http';
import { createServer as createTcp, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProxy } from '../src/index.js';
import { listen } from './support/apps.js';
import { startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { removeTempDirs, startHarnessProxy } from './support/harness.js';
import { createTestPki } from './support/pki.js';
import { steadyLoad } from './support/steady-load.js';

const A_ID = 'client.default.serviceaccount.identity.minimesh.cluster.local';
const B_ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
const WEB = 'web.default.svc.cluster.local';
const RPS = 200;

let cp: FakeControlPlane;
let a: RunningProxy;
const bs: RunningProxy[] = [];
const closers: Array<{ close(): unknown }> = [];
const switches: KillSwitch[] = [];

/** A TCP hop in front of an endpoint that can die at once: resets every connection, refuses new ones. */
interface KillSwitch {
  port: number;
  kill(): void;
}
async function killSwitch(target: number): Promise<KillSwitch> {
  const sockets = new Set<Socket>();
  const server: Server = createTcp((down) => {
    const up = connect(target, '127.0.0.1');
    for (const s of [down, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    down.pipe(up).pipe(down);
    down.on('close', () => up.destroy());
    up.on('close', () => down.destroy());
  });
  const port = await listen(server);
  return {
    port,
    kill() {
      server.close();
      for (const s of sockets) s.resetAndDestroy();
    },
  };
}

beforeAll(async () => {
  const pki = await createTestPki();
  cp = await startFakeControlPlane(pki);
  const endpoints = [];
  for (const name of ['b1', 'b2']) {
    const app = createServer((req, res) => {
      req.resume();
      setTimeout(() => res.end(name), 50);
    });
    closers.push(app);
    const appPort = await listen(app);
    const b = await startHarnessProxy({
      identity: B_ID,
      anchorPem: pki.anchorPem,
      controlAddr: cp.addr,
      inbound: () => ({ ip: '127.0.0.1', port: appPort }),
    });
    bs.push(b);
    const k = await killSwitch(b.ports.inbound);
    switches.push(k);
    endpoints.push({ ip: '127.0.0.1', port: k.port, identity: B_ID });
  }
  a = await startHarnessProxy({
    identity: A_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    outbound: () => ({ ip: '10.96.0.80', port: 80 }),
  });
  cp.destination.set(`${WEB}:80`, endpoints);
  cp.destination.profiles.set('10.96.0.80:80', { fullyQualifiedName: WEB });
  await Promise.all([a.ready, ...bs.map((b) => b.ready)]);
}, 120_000);

afterAll(async () => {
  await a?.shutdown(100);
  for (const b of bs) await b.shutdown(100);
  for (const c of closers) c.close();
  await cp?.close();
  removeTempDirs();
});

/** Sends RPS requests a second for `ms` through A; `during()` runs at `at` ms. Returns every failure. */
async function load(ms: number, at: number, during: () => void) {
  const answered = new Set<string>();
  const r = await steadyLoad({
    port: a.ports.outbound,
    host: WEB,
    rps: RPS,
    ms,
    maxSockets: 64,
    at: { ms: at, run: during },
    onAnswer: (body) => answered.add(`${body}@${Date.now() > killedAt && killedAt > 0 ? 'after' : 'before'}`),
  });
  return { ...r, answered };
}

let killedAt = 0;

describe('a killed endpoint (in-process)', () => {
  it(`at ${RPS} rps over 2 endpoints, one killed: only requests in flight on it fail`, async () => {
    const r = await load(6000, 2000, () => {
      switches[0]?.kill();
      killedAt = Date.now();
    });
    const late = r.failed.filter((f) => f.sent > killedAt);
    console.log(
      `endpoint killed 2 s into a 6 s run at ${RPS} rps: ${r.sent} sent, ${r.failed.length} failed (${r.failed.length - late.length} in flight at the kill, ${late.length} sent after it)`,
    );
    for (const f of late.slice(0, 10)) console.log(`  sent ${f.sent - killedAt} ms after the kill: ${f.why}`);
    expect(r.answered.has('b1@before') && r.answered.has('b2@before')).toBe(true);
    expect(r.answered.has('b2@after')).toBe(true);
    expect(late).toEqual([]);
    // In flight on B1 at the kill: about RPS/2 × 50 ms; never more than were sent to it.
    expect(r.failed.length).toBeLessThanOrEqual(RPS);
  }, 60_000);
});
