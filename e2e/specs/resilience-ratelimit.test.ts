// HTTP local rate limiting on a cluster (MINIMESH_E2E_DRIVER=local, the default, or k3d): a Server
// with an HTTPLocalRateLimitPolicy of 50 requests per second per identity and an override of 100 for
// the `fast` ServiceAccount. Two meshed clients (`slow`, `fast`) each offer 200 requests per second for
// 20 s; the server's proxy admits each at its own limit (within 10 %, measured after the first 5 s,
// which spend the buckets' initial burst) and answers the rest 429 with Retry-After, counted in
// inbound_http_local_ratelimit_total. The API server refuses a limit of 0.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import type { K8sObject } from '../src/chart.js';
import {
  deployment,
  echoServer,
  meshedNamespace,
  nodeScriptContainer,
  readyPod,
  serviceAccount,
  setUpSpecMesh,
  tearDownSpecMesh,
  type SpecMesh,
} from '../src/apps.js';
import {
  applyObjects,
  eventually,
  identityOf,
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
const m: MeshSetup = specMeshSetup(driver, { cpNs: `minimesh-e2e-${suffix}`, appNs: `mm-e2e-ratelimit-${suffix}` });
const ns = m.appNs;
const G = 'policy.minimesh.io';
const OFFERED_RPS = 200;
const SECONDS = 20;
/** Seconds left out of the measure: the buckets start full (a burst of one second's worth). */
const WARM_S = 5;
const LIMITS = { slow: 50, fast: 100 };
let spec: SpecMesh | undefined;

// The client: waits for its proxy to know the Server's policy (a few requests), then offers
// OFFERED_RPS requests per second for SECONDS, open loop (at most 64 in flight), and prints one line
// per second: { s, ok, limited, other } and the first 429's headers.
const CLIENT_SCRIPT = `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const get = () => new Promise((resolve) => {
  const req = http.request({ host: 'server', port: ${SERVER_HTTP_PORT}, path: '/', agent, timeout: 5000 }, (res) => {
    res.resume();
    res.on('end', () => resolve(res));
  });
  req.on('timeout', () => req.destroy(new Error('timed out')));
  req.on('error', () => resolve(undefined));
  req.end();
});
(async () => {
  for (let i = 0; i < 10; i++) { await get(); await sleep(200); }
  await sleep(3000);
  const start = Date.now();
  const secs = Array.from({ length: ${SECONDS} }, (_, s) => ({ s, ok: 0, limited: 0, other: 0 }));
  let inflight = 0, first429;
  const tasks = [];
  for (let i = 0; i < ${OFFERED_RPS * SECONDS}; i++) {
    const at = start + (i * 1000) / ${OFFERED_RPS};
    const wait = at - Date.now();
    if (wait > 0) await sleep(wait);
    if (inflight >= 64) continue;
    inflight++;
    const s = secs[Math.min(${SECONDS - 1}, Math.floor((Date.now() - start) / 1000))];
    tasks.push(get().then((res) => {
      inflight--;
      const status = res && res.statusCode;
      if (status === 200) s.ok++;
      else if (status === 429) { s.limited++; first429 ??= { retryAfter: res.headers['retry-after'], error: res.headers['x-minimesh-proxy-error'] }; }
      else s.other++;
    }));
  }
  await Promise.all(tasks);
  for (const s of secs) out(s);
  out({ done: true, first429 });
  setInterval(() => {}, 60000);
})();
`;

function appObjects(): K8sObject[] {
  const client = (name: 'slow' | 'fast'): K8sObject[] => [
    serviceAccount(ns, name),
    deployment(driver, ns, name, [nodeScriptContainer(driver, CLIENT_SCRIPT)], { serviceAccount: name }),
  ];
  return [
    meshedNamespace(m),
    ...echoServer(m),
    {
      apiVersion: `${G}/v1beta3`,
      kind: 'Server',
      metadata: { name: 'server-http', namespace: ns },
      spec: {
        podSelector: { matchLabels: { app: 'server' } },
        port: 'http',
        proxyProtocol: 'HTTP/1',
        accessPolicy: 'all-unauthenticated',
      },
    },
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'HTTPLocalRateLimitPolicy',
      metadata: { name: 'server-limit', namespace: ns },
      spec: {
        targetRef: { group: G, kind: 'Server', name: 'server-http' },
        identity: { requestsPerSecond: LIMITS.slow },
        overrides: [{ requestsPerSecond: LIMITS.fast, clientRefs: [{ kind: 'ServiceAccount', name: 'fast' }] }],
      },
    },
    ...client('slow'),
    ...client('fast'),
  ];
}

interface Second {
  s?: number;
  ok?: number;
  limited?: number;
  other?: number;
  done?: boolean;
  first429?: { retryAfter?: string; error?: string };
}

const pods: Record<string, Pod> = {};

beforeAll(async () => {
  spec = await setUpSpecMesh(m, { tmpPrefix: 'mm-e2e-ratelimit-' });
  await applyObjects(driver, appObjects());
  for (const app of ['server', 'slow', 'fast']) pods[app] = await readyPod(m, app);
}, 900_000);

afterAll(() => tearDownSpecMesh(m, spec));

describe(`HTTP local rate limits on the ${driver.name} cluster`, () => {
  it.each([['slow'], ['fast']] as const)(
    `%s: admitted at its limit (within 10 %%) out of ${OFFERED_RPS} rps offered, the rest 429 with Retry-After`,
    async (app) => {
      const lines = await eventually(`${app}'s ${SECONDS} s of requests`, 180_000, async () => {
        const l = parseClientLines(await driver.logs(ns, pods[app]!.metadata.name, 'app')) as unknown as Second[];
        return l.some((x) => x.done) ? l : undefined;
      });
      const secs = lines.filter((l) => l.s !== undefined && l.s >= WARM_S);
      const ok = secs.reduce((n, l) => n + (l.ok ?? 0), 0);
      const limited = secs.reduce((n, l) => n + (l.limited ?? 0), 0);
      const other = secs.reduce((n, l) => n + (l.other ?? 0), 0);
      const rate = ok / secs.length;
      console.log(
        `rate limit ${app}: ${rate.toFixed(1)} rps admitted (limit ${LIMITS[app]}), ` +
          `${(limited / secs.length).toFixed(1)} rps refused (429), ${other} other, over ${secs.length} s`,
      );
      expect(Math.abs(rate - LIMITS[app]) / LIMITS[app]).toBeLessThanOrEqual(0.1);
      expect(limited / secs.length).toBeGreaterThan(OFFERED_RPS / 4);
      expect(other).toBeLessThan((ok + limited) / 100);
      const first = lines.find((l) => l.done)?.first429;
      expect(first?.retryAfter).toBe('1');
      expect(first?.error).toBe(
        `MINIMESH_PROXY_RATE_LIMITED: ${app === 'fast' ? 'override' : 'per-identity'} rate limit exceeded: ${LIMITS[app]}rps`,
      );
    },
    240_000,
  );

  it("counts the refusals in the server proxy's inbound_http_local_ratelimit_total", async () => {
    const text = await proxyMetrics(driver, ns, pods.server!.metadata.name);
    for (const app of ['slow', 'fast'])
      expect(
        metricSum(text, 'inbound_http_local_ratelimit_total', {
          srv_name: 'server-http',
          ratelimit_group: G,
          ratelimit_kind: 'HTTPLocalRateLimitPolicy',
          ratelimit_name: 'server-limit',
          ratelimit_scope: 'identity',
          client_id: identityOf(app, ns, m.cpNs),
        }),
      ).toBeGreaterThan(1000);
  });

  it('the API server refuses a limit of 0', async () => {
    const bad = {
      apiVersion: `${G}/v1alpha1`,
      kind: 'HTTPLocalRateLimitPolicy',
      metadata: { name: 'zero', namespace: ns },
      spec: { targetRef: { group: G, kind: 'Server', name: 'server-http' }, total: { requestsPerSecond: 0 } },
    };
    const err = await applyObjects(driver, [bad]).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/spec\.total\.requestsPerSecond/);
  });
});
