// PENDING (not in e2e/specs.json's specs/**, so npm test does not run it yet): written against the
// local cluster's helpers but not yet run there (the branch's deadline came while the images built);
// it moves to e2e/specs/ once it has passed on `npm run cluster`.
// A canary on a cluster (issue 26): a Gateway API HTTPRoute on the Service `web` splits its traffic
// 90/10 between web-v1 and web-v2 (each its own Deployment and Service). From a meshed client pod,
// 2,000 requests: web-v2's share is within the binomial 99.9 % interval; the weight moved to 0/100
// while 1,500 requests are under way: none fails, and afterwards every request goes to web-v2.
// `minimesh viz stat-outbound deploy/client` shows the route and both backends.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import type { K8sObject } from '../src/chart.js';
import {
  applyObjects,
  createMeshCerts,
  describePods,
  E2E_SCOPE_LABEL,
  ensureGatewayApiCrds,
  eventually,
  installChart,
  uninstallChart,
  waitForReadyPods,
  specMeshSetup,
  SERVER_HTTP_PORT,
  type MeshSetup,
  type Pod,
} from '../src/mesh.js';
import { cliMain as CLI, run } from '../src/tools.js';

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
let tmp = '';
let client: Pod;

function deployment(name: string, containers: unknown[]): K8sObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 5,
          containers: driver.imagePullPolicy
            ? containers.map((c) => ({ ...(c as object), imagePullPolicy: driver.imagePullPolicy }))
            : containers,
        },
      },
    },
  };
}

const service = (name: string, app: string): K8sObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: ns },
  spec: { selector: { app }, ports: [{ name: 'http', port: SERVER_HTTP_PORT, targetPort: SERVER_HTTP_PORT }] },
});

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
  const podName = { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } };
  const echo = (name: string) =>
    deployment(name, [
      {
        name: 'http',
        image: driver.fixtureImage('http-echo'),
        env: [podName, { name: 'PORT', value: String(SERVER_HTTP_PORT) }],
        ports: [{ name: 'http', containerPort: SERVER_HTTP_PORT }],
        readinessProbe: { httpGet: { path: '/healthz', port: SERVER_HTTP_PORT }, periodSeconds: 2 },
      },
    ]);
  return [
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: ns,
        labels: m.scopeWebhook ? { [E2E_SCOPE_LABEL]: m.cpNs } : {},
        annotations: { 'minimesh.io/inject': 'enabled' },
      },
    },
    // The parent Service selects the stable version: without the route everything goes to web-v1.
    service('web', 'web-v1'),
    service('web-v1', 'web-v1'),
    service('web-v2', 'web-v2'),
    echo('web-v1'),
    echo('web-v2'),
    // A steady trickle (what Prometheus sees), and the pod the bursts are run in.
    deployment('client', [
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

function minimesh(args: readonly string[], timeoutMs = 60_000) {
  const cp = args[0] === 'viz' ? ['--control-plane-namespace', m.cpNs] : [];
  return run(process.execPath, [CLI, ...args, ...driver.kubeArgs(), ...cp], { timeoutMs });
}

async function ready(namespace: string, app: string, key = 'app'): Promise<Pod> {
  try {
    const [pod] = await waitForReadyPods(driver, namespace, app, 1, ROLLOUT_MS, key);
    return pod as Pod;
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await describePods(driver, namespace)}`, { cause: err });
  }
}

beforeAll(async () => {
  await driver.setup();
  tmp = mkdtempSync(join(tmpdir(), 'mm-e2e-canary-'));
  await ensureGatewayApiCrds(driver);
  await installChart(m, await createMeshCerts(tmp));
  for (const c of ['identity', 'destination', 'injector', 'prometheus'])
    await ready(m.cpNs, c, 'minimesh.io/control-plane-component');
  await applyObjects(driver, appObjects());
  await ready(ns, 'web-v1');
  await ready(ns, 'web-v2');
  client = await ready(ns, 'client');
}, 900_000);

afterAll(async () => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  if (process.env.MINIMESH_E2E_KEEP === '1') return;
  await driver.kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  if (driver.name === 'local') await uninstallChart(m);
}, 180_000);

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
