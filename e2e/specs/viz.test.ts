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
} from '../src/mesh.js';
import { appObjects, readyPods } from '../src/apps.js';
import { cliMain as CLI, repoRoot, run } from '../src/tools.js';

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

/** `minimesh <args>` against the cluster, as a user runs it. */
function minimesh(args: readonly string[], timeoutMs = 60_000) {
  const cp = args[0] === 'viz' ? ['--control-plane-namespace', m.cpNs] : [];
  return run(process.execPath, [CLI, ...args, ...driver.kubeArgs(), ...cp], { timeoutMs });
}

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
}, 900_000);

afterAll(async () => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
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
    const r = await minimesh(['viz', 'tap', 'deploy/server', '-n', m.appNs, '--limit', '3', '-o', 'json'], 90_000);
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
    const req = records.find((x) => x.type === 'requestInit');
    expect(req).toMatchObject({ tls: 'true', source: { identity: clientId }, destination: { identity: serverId } });
    expect(records.some((x) => x.type === 'responseInit' && x.status === 200)).toBe(true);
  });

  it("diagnostics proxy-metrics: the server's proxy counts mTLS requests, read through the API server", async () => {
    const r = await minimesh(['diagnostics', 'proxy-metrics', `${m.appNs}/${server.metadata.name}`]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^request_total\{[^}]*direction="inbound"[^}]*tls="true"/m);
  });

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
