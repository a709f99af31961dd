// minimesh viz on a cluster (issue 16): the chart installed with viz.enabled, the real Prometheus
// scraping the real proxies of a client and a server, and the user's commands against that traffic:
// `viz stat` (meshed pods, a non-zero success rate and RPS), `viz edges` (client -> server secured,
// both identities), `viz tap` (live requests with both identities), `diagnostics proxy-metrics` (through
// the API server's pod proxy) and the dashboard in Debian's chromium (the edge marked mTLS, a non-zero
// success rate; screenshot in e2e/.artifacts/).
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import { chromiumMissing, launchBrowser } from '@minimesh/test-support/browser';
import type { CertFiles } from '../src/certs.js';
import {
  applyObjects,
  createMeshCerts,
  eventually,
  identityOf,
  installChart,
  uninstallChart,
  specMeshSetup,
  type MeshSetup,
  type Pod,
  minimeshCli,
} from '../src/mesh.js';
import { appObjects, clientContainer, deployment, readyPods, serviceAccount } from '../src/apps.js';
import type { OutsideHost } from '../drivers/types.js';
import { cliMain as CLI, repoRoot } from '../src/tools.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
const m: MeshSetup = specMeshSetup(driver, {
  cpNs: `minimesh-viz-${suffix}`,
  appNs: `mm-viz-app-${suffix}`,
  sets: ['viz.enabled=true', 'viz.prometheus.scrapeInterval=5s'],
});
const ROLLOUT_MS = 240_000;
const clientId = identityOf('client', m.appNs, m.cpNs);
const serverId = identityOf('server', m.appNs, m.cpNs);
let tmp = '';
let certs: CertFiles;
let server: Pod;
let outside: OutsideHost | undefined;

/** The outside host's app: HTTP on 80, each request logged. */
const OUTSIDE_APP = `require('node:http').createServer((req, res) => {
  console.log('HTTP ' + req.method + ' ' + req.url);
  res.end('outside host: ' + req.url);
}).listen(80, '0.0.0.0', () => console.log('listening'));`;

/**
 * Policy for viz to show: a Server on the server's HTTP port (open to all) with an
 * HTTPLocalRateLimitPolicy of 1 request/s per client identity, which the client's 2 requests/s
 * exceed (the kubelet's probes, without an identity, stay under it). Egress: an EgressNetwork that
 * denies traffic to the outside host's network, an HTTPRoute on it that allows /allowed, and a meshed
 * client calling both /allowed/viz and /denied/viz every 500 ms.
 */
function policyObjects(ip: string) {
  const url = (path: string) => `http://${ip}:80${path}`;
  return [
    {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'Server',
      metadata: { name: 'server-http', namespace: m.appNs },
      spec: {
        podSelector: { matchLabels: { app: 'server' } },
        port: 'http',
        proxyProtocol: 'HTTP/1',
        accessPolicy: 'all-unauthenticated',
      },
    },
    {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'HTTPLocalRateLimitPolicy',
      metadata: { name: 'server-limit', namespace: m.appNs },
      spec: {
        targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'server-http' },
        identity: { requestsPerSecond: 1 },
      },
    },
    {
      apiVersion: 'policy.minimesh.io/v1alpha1',
      kind: 'EgressNetwork',
      metadata: { name: 'outside', namespace: m.appNs },
      spec: { networks: [{ cidr: `${ip}/32` }], trafficPolicy: 'Deny' },
    },
    {
      apiVersion: 'policy.minimesh.io/v1beta3',
      kind: 'HTTPRoute',
      metadata: { name: 'outside-allowed', namespace: m.appNs },
      spec: {
        parentRefs: [{ group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside', port: 80 }],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/allowed' } }] }],
      },
    },
    serviceAccount(m.appNs, 'egress'),
    deployment(
      m.driver,
      m.appNs,
      'egress',
      [
        clientContainer(m.driver, url('/allowed/viz')),
        { ...clientContainer(m.driver, url('/denied/viz')), name: 'denied' },
      ],
      { serviceAccount: 'egress' },
    ),
  ];
}

const minimesh = minimeshCli(m);

beforeAll(async () => {
  await driver.setup();
  tmp = mkdtempSync(join(tmpdir(), 'mm-e2e-viz-'));
  certs = await createMeshCerts(tmp);
  await installChart(m, certs);
  for (const c of ['identity', 'destination', 'injector', 'prometheus', 'tap'])
    await readyPods(m, c, { controlPlane: true, timeoutMs: ROLLOUT_MS });
  await applyObjects(driver, appObjects(m));
  [server] = (await readyPods(m, 'server', { timeoutMs: ROLLOUT_MS })) as [Pod];
  await readyPods(m, 'client', { timeoutMs: ROLLOUT_MS });
  outside = await driver.outsideHost(suffix, OUTSIDE_APP);
  await applyObjects(driver, policyObjects(outside.ip));
  await readyPods(m, 'egress', { timeoutMs: ROLLOUT_MS });
}, 900_000);

afterAll(async () => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  await outside?.remove();
  if (process.env.MINIMESH_E2E_KEEP === '1') return;
  await driver.kubectl(['delete', 'namespace', m.appNs, '--wait=false', '--ignore-not-found']);
  if (driver.name === 'local') await uninstallChart(m);
}, 180_000);

describe(`viz on the ${driver.name} cluster`, () => {
  it('stat: the server is meshed, answers successfully, and Prometheus has its RPS and latency', async () => {
    const row = await eventually('a stat row for deploy/server with traffic', 180_000, async () => {
      const r = await minimesh(['viz', 'stat', 'deploy', '-n', m.appNs, '-o', 'json']);
      if (r.code !== 0) throw new Error(r.stderr.trim());
      const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
      const s = rows.find((x) => x.name === 'server');
      return s && typeof s.success === 'number' && (s.rps as number) > 0 ? s : undefined;
    });
    expect(row.meshed).toBe('1/1');
    expect(row.success).toBeGreaterThan(0.9);
    expect(row.latency_ms_p50).toBeGreaterThan(0);
    const table = await minimesh(['viz', 'stat', 'deploy', '-n', m.appNs]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^NAME\s+MESHED\s+SUCCESS\s+RPS/);
    expect(table.stdout).toMatch(/\nserver\s+1\/1\s+\d+\.\d+%/);
    console.log(`[viz] minimesh viz stat deploy -n ${m.appNs}\n${table.stdout}`);
  });

  it('edges: client -> server over mTLS, with both identities', async () => {
    const edge = await eventually('the client -> server edge', 120_000, async () => {
      const r = await minimesh(['viz', 'edges', 'deploy', '-n', m.appNs, '-o', 'json']);
      if (r.code !== 0) throw new Error(r.stderr.trim());
      const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
      return rows.find((e) => e.src === 'client' && e.dst === 'server');
    });
    expect(edge).toMatchObject({ client_id: clientId, server_id: serverId, secured: true });
  });

  it('tap: live requests to the server with both identities', async () => {
    const r = await minimesh(['viz', 'tap', 'deploy/server', '-n', m.appNs, '--limit', '10', '-o', 'json'], 90_000);
    expect(r.code, r.stderr).toBe(0);
    const records = r.stdout
      .split('\n')
      .filter(Boolean)
      .map(
        (l) =>
          JSON.parse(l) as {
            type: string;
            method?: string;
            status?: number;
            tls: string;
            source: { identity: string };
            destination: { identity: string };
          },
      );
    // The server also gets the kubelet's readiness probes (plaintext, no identity): the client's
    // requests are the ones to judge, and there must be some among the ten.
    const seen = JSON.stringify(records.filter((x) => x.type === 'requestInit'));
    const fromClient = records.filter((x) => x.type === 'requestInit' && x.source.identity === clientId);
    expect(fromClient.length, seen).toBeGreaterThan(0);
    for (const req of fromClient) expect(req, seen).toMatchObject({ tls: 'true', destination: { identity: serverId } });
    expect(records.some((x) => x.type === 'responseInit' && x.status === 200)).toBe(true);
  });

  it("diagnostics proxy-metrics: the server's proxy counts mTLS requests, read through the API server", async () => {
    const r = await minimesh(['diagnostics', 'proxy-metrics', `${m.appNs}/${server.metadata.name}`]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^request_total\{[^}]*direction="inbound"[^}]*tls="true"/m);
  });

  it("stat-outbound: traffic leaving the cluster under its EgressNetwork, the allowed route and the denied rest, as Prometheus scraped the client's proxy", async () => {
    type Row = { service: string; route: string; backend?: string; requests: number; successRate: number | null };
    const found = await eventually(
      'stat-outbound rows of EgressNetwork/outside:80 for both routes',
      180_000,
      async () => {
        const r = await minimesh(['viz', 'stat-outbound', 'deploy/egress', '-n', m.appNs, '-o', 'json']);
        if (r.code !== 0) throw new Error(r.stderr.trim());
        const rows = (JSON.parse(r.stdout) as Row[]).filter(
          (x) => x.service === 'EgressNetwork/outside:80' && !x.backend,
        );
        const allowed = rows.find((x) => x.route === 'outside-allowed');
        const denied = rows.find((x) => x.route === 'http-egress-deny');
        return allowed && denied && allowed.requests > 0 && denied.requests > 0 ? { allowed, denied } : undefined;
      },
    );
    const table = await minimesh(['viz', 'stat-outbound', 'deploy/egress', '-n', m.appNs]);
    console.log(`minimesh viz stat-outbound deploy/egress:\n${table.stdout}`);
    // Every allowed request answered by the outside host; the denied ones (403 from the client's own
    // proxy) counted under the EgressNetwork's default deny route.
    expect(found.allowed.successRate).toBe(1);
    expect(table.stdout).toMatch(/EgressNetwork\/outside:80\s+outside-allowed/);
    const log = await outside!.log();
    expect(log).toContain('HTTP GET /allowed/viz');
    expect(log).not.toContain('/denied');
    // Each denied request got 403 from the proxy, as the client saw it.
    const denied = await driver.kubectl(['logs', '-n', m.appNs, 'deploy/egress', '-c', 'denied', '--tail', '5']);
    expect(denied.stdout).toMatch(/"status":403/);
  }, 240_000);

  it("authz: the server's Server, the requests it allowed and those over its HTTPLocalRateLimitPolicy", async () => {
    type Row = {
      server: string;
      route: string;
      authorization: string;
      rateLimit: string;
      allowed: number;
      rateLimited: number;
    };
    const rows = await eventually('authz rows of server-http, allowed and rate limited', 180_000, async () => {
      const r = await minimesh(['viz', 'authz', 'deploy/server', '-n', m.appNs, '-o', 'json']);
      if (r.code !== 0) throw new Error(r.stderr.trim());
      const rows = (JSON.parse(r.stdout) as Row[]).filter((x) => x.server === 'server-http');
      const allowed = rows.filter((x) => x.allowed > 0);
      const limited = rows.find((x) => x.rateLimited > 0);
      return allowed.length > 0 && limited ? { allowed, limited } : undefined;
    });
    const table = await minimesh(['viz', 'authz', 'deploy/server', '-n', m.appNs]);
    console.log(`minimesh viz authz deploy/server:\n${table.stdout}`);
    expect(rows.limited.rateLimit).toBe('HTTPLocalRateLimitPolicy/server-limit (identity)');
    expect(table.stdout).toMatch(
      /server-http\s+-\s+-\s+\S+\s+\S+\s+\d+\.\d+rps\s+HTTPLocalRateLimitPolicy\/server-limit \(identity\)/,
    );
    // The client's own answers: some 429 from the server's proxy.
    const client = await driver.kubectl(['logs', '-n', m.appNs, 'deploy/client', '-c', 'http', '--tail', '40']);
    expect(client.stdout).toMatch(/"status":429/);
  }, 240_000);

  it('bad input: an unknown workload is one line and exit 2', async () => {
    const r = await minimesh(['viz', 'stat', 'deploy/nope', '-n', m.appNs]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(`minimesh viz: deployment "nope" not found in namespace "${m.appNs}"`);
  });

  const missing = chromiumMissing();
  it.runIf(!missing)(
    `dashboard: the edge is secured and the success rate non-zero${missing ? ` (does not run: ${missing})` : ''}`,
    async () => {
      const child: ChildProcess = spawn(
        process.execPath,
        [
          CLI,
          'viz',
          'dashboard',
          '--port',
          '0',
          '-n',
          m.appNs,
          ...driver.kubeArgs(),
          '--control-plane-namespace',
          m.cpNs,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const browser = await launchBrowser();
      try {
        const url = await new Promise<string>((resolve, reject) => {
          let out = '';
          child.stdout!.on('data', (d: Buffer) => {
            out += d.toString();
            const u = /^(http:\/\/\S+)$/m.exec(out);
            if (u) resolve(u[1]!);
          });
          child.once('exit', (code) => reject(new Error(`dashboard exited ${code}: ${err}`)));
        });
        const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
        await page.goto(`${url}/?namespace=${m.appNs}`);
        await page.waitForSelector('body[data-loaded="true"]', { timeout: 30_000 });
        const success = (await page.locator('#workloads tr[data-name="server"] .success').textContent()) ?? '';
        expect(Number.parseFloat(success)).toBeGreaterThan(0);
        expect(
          await page
            .locator(`#graph .edge.secured[data-src="${m.appNs}/client"][data-dst="${m.appNs}/server"]`)
            .count(),
        ).toBe(1);
        const dir = join(repoRoot, 'e2e', '.artifacts');
        mkdirSync(dir, { recursive: true });
        await page.screenshot({ path: join(dir, 'viz-dashboard.png'), fullPage: true });
      } finally {
        await browser.close();
        child.kill('SIGTERM');
      }
    },
    120_000,
  );
});
