// Failure accrual (circuit breaking) on a cluster (MINIMESH_E2E_DRIVER=local, the default, or k3d):
// a Service with balancer.linkerd.io/failure-accrual: consecutive over three server pods, one of which
// (`flaky`) answers 500 to everything until it is told to recover. A meshed client sends 2,000
// requests through its proxy: the flaky pod is ejected after 3 failures in a row and gets only its
// probes, so the client's success rate stays >= 99.5 % and the flaky pod gets < 2 % of the requests;
// the client proxy's outbound_http_balancer_endpoints shows it pending. Then the client tells the
// flaky pod (through a second Service that selects only it) to recover, and keeps sending: a probe
// finds it well within the max penalty (10 s), and it is back among the balancer's ready endpoints, answering.
// While it is ejected, `minimesh viz stat-outbound` (the chart's Prometheus) shows the backend 2/3 ready.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import type { K8sObject } from '../src/chart.js';
import {
  CONTROL_PLANE,
  deployment,
  echoContainer,
  httpService,
  meshedNamespace,
  nodeScriptContainer,
  readyPod,
  readyPods,
  setUpSpecMesh,
  tearDownSpecMesh,
  type SpecMesh,
} from '../src/apps.js';
import {
  applyObjects,
  eventually,
  minimeshCli,
  metricSum,
  parseClientLines,
  proxyMetrics,
  specMeshSetup,
  SERVER_HTTP_PORT,
  type MeshSetup,
  type Pod,
} from '../src/mesh.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
// viz on: the ejection is checked as `minimesh viz stat-outbound` shows it from the chart's Prometheus.
const m: MeshSetup = specMeshSetup(driver, {
  cpNs: `minimesh-e2e-${suffix}`,
  appNs: `mm-e2e-resil-${suffix}`,
  sets: ['viz.enabled=true', 'viz.prometheus.scrapeInterval=5s'],
});
const minimesh = minimeshCli(m);
const ns = m.appNs;
const REQUESTS = 2000;
const MAX_PENALTY_S = 10;
/** After the 2,000 requests, how long the client trickles on (5 rps) before it has the flaky pod recover. */
const PAUSE_MS = 12_000;
/** How long it keeps sending after the recovery (the max penalty, and time to see the share). */
const AFTER_MS = (MAX_PENALTY_S + 6) * 1000;
let spec: SpecMesh | undefined;

// The flaky server: the fixture image's Node, with a script of its own (the image has no shell):
// 500 to everything but /healthz until POST /recover.
const FLAKY_SCRIPT = `
const http = require('node:http');
const pod = process.env.POD_NAME;
let failing = true;
http.createServer((req, res) => {
  req.resume();
  if (req.url === '/healthz') return res.end('ok');
  if (req.url === '/recover') {
    failing = false;
    process.stdout.write(JSON.stringify({ recovered: Date.now() }) + '\\n');
  }
  res.writeHead(failing ? 500 : 200, { 'x-pod-name': pod });
  res.end(failing ? 'failing' : 'ok');
}).listen(${SERVER_HTTP_PORT}, '0.0.0.0');
`;

// The client: warms its proxy up (the first request to the Service starts the policy watch), sends
// REQUESTS requests two at a time, trickles on for PAUSE_MS, has the flaky pod recover, and sends for
// AFTER_MS more.
// One JSON line per answer: { p: phase, t: epoch ms, status, pod }.
const CLIENT_SCRIPT = `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
const get = (host, path, method = 'GET') => new Promise((resolve) => {
  const req = http.request({ host, port: ${SERVER_HTTP_PORT}, path, method, agent, timeout: 5000 }, (res) => {
    res.resume();
    res.on('end', () => resolve({ status: res.statusCode, pod: res.headers['x-pod-name'] }));
  });
  req.on('timeout', () => req.destroy(new Error('timed out')));
  req.on('error', (e) => resolve({ error: e.message }));
  req.end();
});
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  for (let i = 0; i < 20; i++) await get('server', '/healthz');
  await sleep(3000);
  let n = 0;
  const worker = async () => { while (n < ${REQUESTS}) { n++; out({ p: 1, t: Date.now(), ...(await get('server', '/')) }); } };
  await Promise.all([worker(), worker()]);
  out({ phase1: 'done', t: Date.now() });
  // A trickle while the spec reads the metrics: the flaky pod's probes keep failing.
  const pauseEnd = Date.now() + ${PAUSE_MS};
  while (Date.now() < pauseEnd) { out({ p: 'pause', t: Date.now(), ...(await get('server', '/')) }); await sleep(200); }
  out({ p: 'recover', t: Date.now(), ...(await get('flaky-admin', '/recover', 'POST')) });
  const end = Date.now() + ${AFTER_MS};
  while (Date.now() < end) { out({ p: 2, t: Date.now(), ...(await get('server', '/')) }); await sleep(10); }
  out({ phase2: 'done', t: Date.now() });
  setInterval(() => {}, 60000);
})();
`;

function appObjects(): K8sObject[] {
  // The Service `server` selects both Deployments (svc: server): two good pods and the flaky one.
  const svc = { podLabels: { svc: 'server' } };
  return [
    meshedNamespace(m),
    httpService(
      ns,
      'server',
      { svc: 'server' },
      {
        'balancer.linkerd.io/failure-accrual': 'consecutive',
        'balancer.linkerd.io/failure-accrual-consecutive-max-failures': '3',
        'balancer.linkerd.io/failure-accrual-consecutive-min-penalty': '3s',
        'balancer.linkerd.io/failure-accrual-consecutive-max-penalty': `${MAX_PENALTY_S}s`,
        'balancer.linkerd.io/failure-accrual-consecutive-jitter-ratio': '0.1',
      },
    ),
    httpService(ns, 'flaky-admin', { app: 'flaky' }),
    deployment(driver, ns, 'server', [echoContainer(driver, { name: 'app' })], { replicas: 2, ...svc }),
    deployment(
      driver,
      ns,
      'flaky',
      [echoContainer(driver, { name: 'app', command: ['node', '-e', FLAKY_SCRIPT] })],
      svc,
    ),
    deployment(driver, ns, 'client', [nodeScriptContainer(driver, CLIENT_SCRIPT)]),
  ];
}

interface Line {
  p?: number | 'recover';
  t: number;
  status?: number;
  pod?: string;
  error?: string;
  phase1?: string;
  phase2?: string;
}

let client: Pod;
let flakyPod = '';

/** The client proxy's outbound_http_balancer_endpoints for the Service `server` in `state` (ready | pending). */
function gauge(metrics: string, state: string): number {
  return metricSum(metrics, 'outbound_http_balancer_endpoints', { endpoint_state: state, backend_name: 'server' });
}

async function clientLines(): Promise<Line[]> {
  return parseClientLines(await driver.logs(ns, client.metadata.name, 'app')) as unknown as Line[];
}

beforeAll(async () => {
  spec = await setUpSpecMesh(m, { tmpPrefix: 'mm-e2e-resil-', components: [...CONTROL_PLANE, 'prometheus'] });
  const objects = appObjects();
  // Servers first: the client starts sending as soon as it runs.
  await applyObjects(driver, objects.slice(0, -1));
  await readyPods(m, 'server', { count: 2 });
  flakyPod = (await readyPod(m, 'flaky')).metadata.name;
  await applyObjects(driver, objects.slice(-1));
  client = await readyPod(m, 'client');
}, 900_000);

afterAll(() => tearDownSpecMesh(m, spec));

describe(`failure accrual on the ${driver.name} cluster`, () => {
  it(`ejects the pod answering 500: >= 99.5 % of ${REQUESTS} requests succeed, it gets < 2 %`, async () => {
    const lines = await eventually(`the client's ${REQUESTS} requests`, 240_000, async () => {
      const l = await clientLines();
      return l.some((x) => x.phase1 === 'done') ? l : undefined;
    });
    // While the client trickles on, its proxy shows the flaky pod out of the balancer (but for the
    // moments between a penalty's end and the probe that fails again).
    // The same as `minimesh viz stat-outbound` shows it, from what the chart's Prometheus scraped (its
    // READY column: the backend's ready endpoints of all), while the flaky pod is still failing.
    type Row = { service: string; backend?: string; endpoints?: { ready: number; pending: number } };
    const [, viz] = await Promise.all([
      eventually('outbound_http_balancer_endpoints: 2 ready, 1 pending', PAUSE_MS, async () => {
        const metrics = await proxyMetrics(driver, ns, client.metadata.name);
        return gauge(metrics, 'ready') === 2 && gauge(metrics, 'pending') === 1;
      }),
      eventually('viz stat-outbound: the server backend 2/3 ready', PAUSE_MS, async () => {
        const r = await minimesh(['viz', 'stat-outbound', 'deploy/client', '-n', ns, '-o', 'json']);
        if (r.code !== 0) throw new Error(r.stderr.trim());
        const row = (JSON.parse(r.stdout) as Row[]).find((x) => x.backend?.startsWith('server:'));
        if (row?.endpoints?.ready !== 2 || row.endpoints.pending !== 1) return undefined;
        return (await minimesh(['viz', 'stat-outbound', 'deploy/client', '-n', ns])).stdout;
      }),
    ]);
    console.log(`minimesh viz stat-outbound deploy/client (the flaky pod ejected):\n${viz}`);

    const phase1 = lines.filter((l) => l.p === 1);
    expect(phase1).toHaveLength(REQUESTS);
    const ok = phase1.filter((l) => l.status === 200).length;
    const flaky = phase1.filter((l) => l.pod === flakyPod).length;
    const seconds = ((phase1.at(-1)?.t ?? 0) - (phase1[0]?.t ?? 0)) / 1000;
    console.log(
      `failure accrual: ${ok}/${REQUESTS} succeeded (${((100 * ok) / REQUESTS).toFixed(2)} %), ` +
        `the flaky pod got ${flaky} (${((100 * flaky) / REQUESTS).toFixed(2)} %) in ${seconds.toFixed(1)} s`,
    );
    expect(ok / REQUESTS).toBeGreaterThanOrEqual(0.995);
    expect(flaky / REQUESTS).toBeLessThan(0.02);
    // Every failure is the flaky pod's 500 (nothing refused: two pods were always there).
    expect(phase1.filter((l) => l.status !== 200).every((l) => l.status === 500 && l.pod === flakyPod)).toBe(true);
  }, 300_000);

  it(
    `gives the recovered pod its share back within the max penalty (${MAX_PENALTY_S} s)`,
    async () => {
      const lines = await eventually('the requests after the recovery', PAUSE_MS + AFTER_MS + 60_000, async () => {
        const l = await clientLines();
        return l.some((x) => x.phase2 === 'done') ? l : undefined;
      });
      const recover = lines.find((l) => l.p === 'recover');
      expect(recover?.status).toBe(200);
      const phase2 = lines.filter((l) => l.p === 2);
      const back = phase2.find((l) => l.pod === flakyPod && l.status === 200);
      expect(back, 'a request answered by the recovered pod').toBeDefined();
      const after = ((back?.t ?? 0) - (recover?.t ?? 0)) / 1000;
      expect(after).toBeLessThanOrEqual(MAX_PENALTY_S + 0.5);
      // From then on it takes traffic again, as the two pods that never failed do. How much of it in a
      // given second is the balancer's business (P2C over peak-EWMA latency, as Linkerd's): one slow
      // answer (a new connection, a CPU stall on a busy node) puts a pod's estimate back to the peak,
      // which decays with a 10 s time constant, and P2C over three pods never picks the costliest, so
      // over a 16 s window one pod may sit out for seconds, the recovered one or not: 2026-11-28, 12.3 %
      // of the window in one run, 36.8 % and 29.5 % of its second half in another, 21.1 % of 920
      // requests but none of the second half in a third (and in a CI run). What failure accrual owes:
      // the pod is back among the balancer's ready endpoints (the client proxy's gauge: 3 ready, 0
      // pending) and gets a share of the traffic (more than 5 % since its first answer); without the
      // recovery it would get none and stay pending.
      const since = phase2.filter((l) => l.t >= (back?.t ?? 0));
      const byPod = new Map<string, number>();
      for (const l of since) byPod.set(l.pod ?? '-', (byPod.get(l.pod ?? '-') ?? 0) + 1);
      const share = (byPod.get(flakyPod) ?? 0) / since.length;
      const late = since.slice(Math.floor(since.length / 2));
      const lateShare = late.filter((l) => l.pod === flakyPod).length / late.length;
      console.log(
        `failure accrual: the recovered pod answered again ${after.toFixed(1)} s after it recovered; ` +
          `since then ${(100 * share).toFixed(1)} % of ${since.length} requests ` +
          `(${(100 * lateShare).toFixed(1)} % of the second half); by pod: ` +
          [...byPod].map(([pod, n]) => `${pod === flakyPod ? 'recovered' : pod} ${n}`).join(', '),
      );
      expect(share).toBeGreaterThan(0.05);
      const states = await eventually('outbound_http_balancer_endpoints: 3 ready, 0 pending', 30_000, async () => {
        const metrics = await proxyMetrics(driver, ns, client.metadata.name);
        const s = { ready: gauge(metrics, 'ready'), pending: gauge(metrics, 'pending') };
        return s.ready === 3 && s.pending === 0 ? s : undefined;
      });
      expect(states).toEqual({ ready: 3, pending: 0 });
      expect(since.every((l) => l.status === 200)).toBe(true);
    },
    PAUSE_MS + AFTER_MS + 120_000,
  );
});
