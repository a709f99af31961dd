// A canary on a cluster (issue 26): a Gateway API HTTPRoute on the Service `web` splits its traffic
// 90/10 between web-v1 and web-v2 (each its own Deployment and Service). From a meshed client pod,
// 2,000 requests: web-v2's share is within the binomial 99.9 % interval; the weight moved to 0/100
// while 1,500 requests are under way: none fails, and afterwards every request goes to web-v2.
// `minimesh viz stat-outbound deploy/client` shows the route and both backends.
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
  readyPod,
  setUpSpecMesh,
  tearDownSpecMesh,
  type SpecMesh,
} from '../src/apps.js';
import {
  applyObjects,
  ensureGatewayApiCrds,
  eventually,
  specMeshSetup,
  SERVER_HTTP_PORT,
  type MeshSetup,
  type Pod,
  minimeshCli,
} from '../src/mesh.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
const m: MeshSetup = specMeshSetup(driver, {
  cpNs: `minimesh-canary-${suffix}`,
  appNs: `mm-e2e-canary-${suffix}`,
  sets: ['viz.enabled=true', 'viz.prometheus.scrapeInterval=5s'],
});
const ns = m.appNs;
const ROLLOUT_MS = 240_000;
const URL = `http://web.${ns}.svc.cluster.local:${SERVER_HTTP_PORT}/`;
let spec: SpecMesh | undefined;
let client: Pod;

/** The route users (and Flagger, Argo Rollouts) edit: web's traffic split between web-v1 and web-v2. */
const route = (v1: number, v2: number): K8sObject => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: { name: 'web-split', namespace: ns },
  spec: {
    parentRefs: [{ group: '', kind: 'Service', name: 'web', port: SERVER_HTTP_PORT }],
    rules: [
      {
        backendRefs: [
          { name: 'web-v1', port: SERVER_HTTP_PORT, weight: v1 },
          { name: 'web-v2', port: SERVER_HTTP_PORT, weight: v2 },
        ],
      },
    ],
  },
});

function appObjects(): K8sObject[] {
  const echo = (name: string) => deployment(driver, ns, name, [echoContainer(driver)]);
  return [
    meshedNamespace(m),
    // The parent Service selects the stable version: without the route everything goes to web-v1.
    httpService(ns, 'web', { app: 'web-v1' }),
    httpService(ns, 'web-v1'),
    httpService(ns, 'web-v2'),
    echo('web-v1'),
    echo('web-v2'),
    // A steady trickle (what Prometheus sees), and the pod the bursts are run in.
    deployment(driver, ns, 'client', [
      { name: 'http', image: driver.fixtureImage('http-client'), args: [URL, '--forever', '--interval-ms', '200'] },
    ]),
    route(90, 10),
  ];
}

interface Line {
  status?: number;
  pod?: string;
  error?: string;
}

/** `count` requests from inside the client pod (through its proxy), one JSON line each. */
async function burst(count: number, intervalMs: number): Promise<Line[]> {
  const r = await driver.kubectl([
    'exec',
    '-n',
    ns,
    client.metadata.name,
    '-c',
    'http',
    '--',
    'node',
    '/app/e2e/fixtures/http-client.mjs',
    URL,
    '--count',
    String(count),
    '--interval-ms',
    String(intervalMs),
    '--exit',
  ]);
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
  if (lines.length !== count) throw new Error(`burst: ${lines.length} of ${count} answers\n${r.stderr.slice(-2000)}`);
  return lines;
}

const version = (l: Line) => (l.pod?.startsWith('web-v2-') ? 'v2' : l.pod?.startsWith('web-v1-') ? 'v1' : 'other');

const minimesh = minimeshCli(m);

beforeAll(async () => {
  spec = await setUpSpecMesh(m, {
    tmpPrefix: 'mm-e2e-canary-',
    components: [...CONTROL_PLANE, 'prometheus'],
    timeoutMs: ROLLOUT_MS,
    before: () => ensureGatewayApiCrds(driver),
  });
  await applyObjects(driver, appObjects());
  await readyPod(m, 'web-v1', { timeoutMs: ROLLOUT_MS });
  await readyPod(m, 'web-v2', { timeoutMs: ROLLOUT_MS });
  client = await readyPod(m, 'client', { timeoutMs: ROLLOUT_MS });
}, 900_000);

afterAll(() => tearDownSpecMesh(m, spec), 180_000);

describe(`a canary on the ${driver.name} cluster`, () => {
  it('90/10: 2,000 requests split within the binomial 99.9 % interval, none failed', async () => {
    // The client's proxy has the route once web-v2 answers at all.
    await eventually('web-v2 answering through the split', 120_000, async () =>
      (await burst(60, 0)).some((l) => version(l) === 'v2'),
    );
    const lines = await burst(2000, 0);
    const by = { v1: 0, v2: 0, other: 0, failed: 0 };
    for (const l of lines) {
      if (l.status !== 200) by.failed++;
      else by[version(l)]++;
    }
    console.log(`[canary] 2000 requests at 90/10: ${JSON.stringify(by)}`);
    expect(by.failed).toBe(0);
    expect(by.other).toBe(0);
    // Binomial(2000, 0.1): mean 200, sd 13.4; 99.9 % two-sided: 200 ± 3.29 sd = [156, 244].
    expect(by.v2).toBeGreaterThanOrEqual(156);
    expect(by.v2).toBeLessThanOrEqual(244);
  }, 300_000);

  it('the weight moved to 0/100 under load: 0 failed requests, then everything on web-v2', async () => {
    const load = burst(1500, 10);
    await new Promise((r) => setTimeout(r, 3000));
    await applyObjects(driver, [route(0, 100)]);
    const lines = await load;
    const failed = lines.filter((l) => l.status !== 200);
    const v2 = lines.filter((l) => version(l) === 'v2').length;
    console.log(`[canary] 1500 requests while moving to 0/100: ${failed.length} failed, ${v2} on web-v2`);
    expect(failed).toEqual([]);
    await eventually('only web-v2 after the move', 60_000, async () =>
      (await burst(200, 0)).every((l) => l.status === 200 && version(l) === 'v2'),
    );
  }, 300_000);

  it('viz stat-outbound shows the route and both backends', async () => {
    const table = await eventually('stat-outbound rows for both backends', 180_000, async () => {
      const r = await minimesh(['viz', 'stat-outbound', 'deploy/client', '-n', ns, '-t', '1m']);
      return r.code === 0 &&
        r.stdout.includes(`web-v1:${SERVER_HTTP_PORT}`) &&
        r.stdout.includes(`web-v2:${SERVER_HTTP_PORT}`)
        ? r.stdout
        : undefined;
    });
    console.log(`[canary] minimesh viz stat-outbound deploy/client -n ${ns}\n${table}`);
    const p = SERVER_HTTP_PORT;
    expect(table).toMatch(new RegExp(`^web:${p}\\s+web-split\\s+HTTPRoute\\s+100\\.00%`, 'm'));
    expect(table).toMatch(new RegExp(`[├└]─►\\s+web-v1:${p}\\s+100\\.00%`));
    expect(table).toMatch(new RegExp(`[├└]─►\\s+web-v2:${p}\\s+100\\.00%`));
  }, 240_000);
});
