// Failure accrual (circuit breaking) on loopback, in-process: a proxy streams the OutboundPolicy of a
// Service from minimesh's real policy API (the @minimesh/policy index and gRPC service), whose
// balancer.linkerd.io/failure-accrual annotations ask for consecutive-failures breaking, and balances
// over three unmeshed backends, one of which answers 500 while the test says so. Without accrual
// the bad backend would keep a third of the requests (the last test shows it).
import { createServer as createH1Server, request as h1request } from 'node:http';
import { Server as GrpcServer, ServerCredentials } from '@grpc/grpc-js';
import { PolicyIndex, TEST_CLUSTER, createOutboundHandlers, createPolicyMetrics } from '@minimesh/policy';
import { outbound } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProxy } from '../src/index.js';
import { listen } from './support/apps.js';
import { startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { removeTempDirs, startHarnessProxy } from './support/harness.js';
import { createTestPki, type TestPki } from './support/pki.js';

const NS = 'shop';
const WEB = 'web.shop.svc.cluster.local:80';
const PLAIN = 'plain.shop.svc.cluster.local:80';
const PENALTY = { min: 200, max: 2000 };

let pki: TestPki;
let cp: FakeControlPlane;
let grpc: GrpcServer;
let proxy: RunningProxy;
const servers: Array<{ close(): unknown }> = [];
/** Per backend: requests seen, and whether it answers 500. */
const backends: Array<{ port: number; seen: number; bad: boolean }> = [];

const service = (name: string, ip: string, annotations: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: NS, creationTimestamp: '2026-01-01T00:00:00Z', annotations },
  spec: { clusterIP: ip, clusterIPs: [ip], ports: [{ name: 'http', port: 80 }] },
});

function send(authority: string): Promise<{ status: number; error?: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = h1request(
      { host: '127.0.0.1', port: proxy.ports.outbound, path: '/', agent: false, headers: { host: authority } },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ms: performance.now() - t0,
            ...(res.headers['x-minimesh-proxy-error'] ? { error: String(res.headers['x-minimesh-proxy-error']) } : {}),
          }),
        );
      },
    );
    req.on('error', (err) => resolve({ status: 0, error: err.message, ms: performance.now() - t0 }));
    req.end();
  });
}

/** Sends n requests, 4 at a time; the statuses and what each backend saw. */
async function load(authority: string, n: number): Promise<{ ok: number; statuses: number[]; seen: number[] }> {
  const before = backends.map((b) => b.seen);
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < n) {
        next++;
        statuses.push((await send(authority)).status);
      }
    }),
  );
  return {
    ok: statuses.filter((s) => s === 200).length,
    statuses,
    seen: backends.map((b, i) => b.seen - (before[i] ?? 0)),
  };
}

async function gauge(state: 'ready' | 'pending', name: string): Promise<number> {
  const text = await proxy.metrics.registry.getSingleMetricAsString('outbound_http_balancer_endpoints');
  const m = new RegExp(`endpoint_state="${state}"[^}]*parent_name="${name}"[^}]*\\} (\\d+)`).exec(text);
  return Number(m?.[1] ?? -1);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  pki = await createTestPki();
  cp = await startFakeControlPlane(pki);
  for (let i = 0; i < 3; i++) {
    const b = { port: 0, seen: 0, bad: false };
    const s = createH1Server((req, res) => {
      b.seen++;
      req.resume();
      res.writeHead(b.bad ? 500 : 200, { 'content-type': 'text/plain' });
      res.end(b.bad ? 'broken' : 'ok');
    });
    servers.push(s);
    b.port = await listen(s);
    backends.push(b);
  }
  const eps = backends.map((b) => ({ ip: '127.0.0.1', port: b.port }));
  cp.destination.set(WEB, eps);
  cp.destination.set(PLAIN, eps);

  const index = new PolicyIndex(TEST_CLUSTER);
  index.apply(
    'Service',
    service('web', '10.96.9.1', {
      'balancer.linkerd.io/failure-accrual': 'consecutive',
      'balancer.linkerd.io/failure-accrual-consecutive-max-failures': '3',
      'balancer.linkerd.io/failure-accrual-consecutive-min-penalty': `${PENALTY.min}ms`,
      'balancer.linkerd.io/failure-accrual-consecutive-max-penalty': `${PENALTY.max}ms`,
      'balancer.linkerd.io/failure-accrual-consecutive-jitter-ratio': '0',
    }),
  );
  index.apply('Service', service('plain', '10.96.9.2', {}));
  const logger = createLogger({ name: 'policy', level: 'silent', format: 'json' });
  grpc = new GrpcServer();
  grpc.addService(
    outbound.OutboundPoliciesService,
    createOutboundHandlers({ index, logger, metrics: createPolicyMetrics(new Registry()) }),
  );
  const port = await new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  proxy = await startHarnessProxy({
    identity: `client.${NS}.serviceaccount.identity.minimesh.cluster.local`,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    env: {
      MINIMESH_PROXY_POLICY_SVC_ADDR: `127.0.0.1:${port}`,
      MINIMESH_PROXY_POLICY_WORKLOAD: JSON.stringify({ ns: NS, pod: 'client-1' }),
    },
  });
  await proxy.ready;
  // The first requests start the watches; the breaker applies once the policy arrived.
  await load(WEB, 10);
  await load(PLAIN, 10);
  await sleep(300);
}, 40_000);

afterAll(async () => {
  await proxy?.shutdown(100);
  for (const s of servers) s.close();
  grpc?.forceShutdown();
  await cp?.close();
  removeTempDirs();
});

describe('failure accrual from balancer.linkerd.io annotations', () => {
  it('one backend answering 500 is ejected after 3 failures: it sees only its probes, every other request succeeds', async () => {
    backends[0]!.bad = true;
    const t0 = performance.now();
    const r = await load(WEB, 600);
    const elapsed = performance.now() - t0;
    // 3 failures (and up to 3 more in flight), then one probe per penalty (200, 400, 800, 1600, then
    // 2000 ms) while the load lasts — seconds on a loaded machine; without accrual it would see ~200.
    const bound = 3 + 3 + 4 + Math.ceil(elapsed / PENALTY.max);
    expect(r.seen[0]).toBeLessThanOrEqual(bound);
    expect(r.ok).toBe(600 - r.seen[0]!);
    expect(r.ok / 600).toBeGreaterThanOrEqual(0.95);
    expect(await gauge('pending', 'web')).toBe(1);
    expect(await gauge('ready', 'web')).toBe(2);
  });

  it('it gets its share back within the max penalty once it answers again', async () => {
    backends[0]!.bad = false;
    await sleep(PENALTY.max + 100); // its penalty is over: the next pick of it is the probe
    const r = await load(WEB, 300);
    expect(r.ok).toBe(300);
    expect(r.seen[0]).toBeGreaterThan(300 * 0.15);
    expect(await gauge('pending', 'web')).toBe(0);
  });

  it('every backend failing: ejected one by one, then requests are refused at once (503), saying why', async () => {
    for (const b of backends) b.bad = true;
    await load(WEB, 30);
    // Between probes (a probe itself still reaches a backend and gets its 500), a request is refused.
    let r = await send(WEB);
    for (let i = 0; i < 50 && r.status !== 503; i++) r = await send(WEB);
    expect(r.status).toBe(503);
    expect(r.error).toMatch(/every endpoint is ejected by failure accrual/);
    expect(r.ms).toBeLessThan(1000);
    for (const b of backends) b.bad = false;
    await sleep(PENALTY.max + 100);
    // Probes bring them back.
    const after = await load(WEB, 100);
    expect(after.ok).toBeGreaterThan(90);
  });

  it('a Service without the annotations keeps sending a third of its requests to the bad backend', async () => {
    backends[0]!.bad = true;
    const r = await load(PLAIN, 300);
    backends[0]!.bad = false;
    expect(r.seen[0]).toBeGreaterThan(300 * 0.1);
    expect(r.ok).toBeLessThan(300 - 300 * 0.1);
  });
});
