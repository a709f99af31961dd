// The dashboard in a real browser (Debian's chromium, driven by playwright-core) over a fake API server,
// a fake Prometheus HTTP API and the real tap service in front of a gRPC tap server: it shows the
// namespaces, the workloads' golden metrics with sparklines, the edge graph with mTLS marked, the charts,
// live requests, and the CLI's one-line error when Prometheus is down. The same page against the real
// cluster: e2e/specs/viz.test.ts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Server as GrpcServer, ServerCredentials, type ServerWritableStream } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tap, toTcpAddress } from '@minimesh/proto';
import type { FastifyInstance } from 'fastify';
import { createDashboard } from '../src/dashboard/server.js';
import { prometheusAt } from '../src/kube-io.js';
import { createGrpcDialer } from '../src/tap-service/dial.js';
import { createTapService } from '../src/tap-service/tap-service.js';
import { chromiumMissing, launchBrowser } from '@minimesh/test-support/browser';
import { CLIENT_ID, fakeKube, startFakePrometheus } from './support/fakes.js';

const missing = chromiumMissing();
if (missing) console.warn(`[viz] the dashboard browser test does not run: ${missing}`);

let prom: Awaited<ReturnType<typeof startFakePrometheus>>;
let grpc: GrpcServer;
let tapHttp: Server;
let dashboard: FastifyInstance;
let down: FastifyInstance;
let base = '';
let downBase = '';
let browser: Awaited<ReturnType<typeof launchBrowser>>;

beforeAll(async () => {
  if (missing) return;
  prom = await startFakePrometheus();
  grpc = new GrpcServer();
  grpc.addService(tap.TapService, {
    observe: (call: ServerWritableStream<tap.ObserveRequest, tap.TapEvent>) => {
      const meta = {
        source: toTcpAddress('127.0.0.5', 41000),
        sourceMeta: { labels: { tls: 'true', client_id: CLIENT_ID } },
        destination: toTcpAddress('127.0.0.1', 8080),
        proxyDirection: tap.TapEvent_ProxyDirection.INBOUND,
      };
      const id = { base: 1, stream: 7n };
      const timer = setTimeout(() => {
        call.write({
          ...meta,
          event: {
            $case: 'http',
            value: {
              event: {
                $case: 'requestInit',
                value: {
                  id,
                  authority: 'server.demo:8080',
                  path: '/hello',
                  method: { type: { $case: 'registered', value: 0 } },
                },
              },
            },
          },
        });
        call.write({
          ...meta,
          event: {
            $case: 'http',
            value: {
              event: {
                $case: 'responseInit',
                value: { id, httpStatus: 200, sinceRequestInit: { seconds: 0n, nanos: 1_500_000 } },
              },
            },
          },
        });
        call.write({
          ...meta,
          event: { $case: 'http', value: { event: { $case: 'responseEnd', value: { id, responseBytes: 2n } } } },
        });
      }, 300);
      call.on('cancelled', () => clearTimeout(timer));
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const handler = createTapService({
    kube: fakeKube(),
    dial: createGrpcDialer({ port }),
    controlPlaneNamespace: 'minimesh',
    trustDomain: 'cluster.local',
    maxLimit: 1000,
  });
  tapHttp = createServer((req, res) => void handler(req, res));
  await new Promise<void>((r) => tapHttp.listen(0, '127.0.0.1', r));
  const kube = fakeKube({ tapBase: `http://127.0.0.1:${(tapHttp.address() as AddressInfo).port}` });
  const common = {
    tapUrl: async () => 'http://minimesh-tap.minimesh.svc.cluster.local:8089',
    context: 'fake cluster',
    defaultNamespace: 'demo',
  };
  dashboard = await createDashboard({
    ...common,
    deps: { kube, prometheus: async () => prometheusAt(kube, prom.url) },
  });
  base = await dashboard.listen({ host: '127.0.0.1', port: 0 });
  // The same page when Prometheus does not answer (nothing listens on port 9 of loopback).
  down = await createDashboard({
    ...common,
    deps: { kube, prometheus: async () => prometheusAt(kube, 'http://127.0.0.1:9') },
  });
  downBase = await down.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  await down?.close();
  await new Promise((r) => (tapHttp ? tapHttp.close(r) : r(undefined)));
  grpc?.forceShutdown();
  await prom?.close();
});

describe.skipIf(missing !== undefined)('the dashboard in chromium', () => {
  it('shows namespaces, golden metrics with sparklines, the mTLS edge, charts and live requests', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    const consoleErrors: string[] = [];
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    await page.goto(`${base}/?namespace=demo`);
    await page.waitForSelector('body[data-loaded="true"]', { timeout: 15_000 });
    expect(await page.textContent('#namespaces tr[data-namespace="demo"] td.num')).toBe('2/2');
    const server = page.locator('#workloads tr[data-name="server"]');
    expect(await server.locator('.success').textContent()).toBe('95.00%');
    expect(await server.locator('.rps').textContent()).toBe('2.0rps');
    expect(await server.locator('svg.spark path').count()).toBe(1);
    expect(await page.locator('#graph .edge.secured[data-src="demo/client"][data-dst="demo/server"]').count()).toBe(1);
    expect(await page.textContent('#edges tr[data-src="client"] td.secured')).toBe('√ mTLS');
    expect(await page.locator('#latency-chart path.series').count()).toBe(3);
    expect(await page.locator('#rps-chart path.series').count()).toBe(1);
    await server.click();
    await page.click('#tap-toggle');
    await page.waitForSelector('#tap tr.tap-row td.status:text("200")', { timeout: 10_000 });
    const row = page.locator('#tap tr.tap-row').first();
    expect(await row.textContent()).toContain('/hello');
    expect(await row.textContent()).toContain(CLIENT_ID);
    mkdirSync(join(import.meta.dirname, '..', '.artifacts'), { recursive: true });
    await page.screenshot({
      path: join(import.meta.dirname, '..', '.artifacts', 'dashboard-fake.png'),
      fullPage: true,
    });
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  it('shows the same one-line error as the CLI when Prometheus is unreachable', async () => {
    const page = await browser.newPage();
    await page.goto(`${downBase}/?namespace=demo`);
    await page.waitForSelector('body[data-loaded="error"]', { timeout: 15_000 });
    expect(await page.textContent('#error')).toMatch(/^prometheus at http:\/\/127\.0\.0\.1:9 is unreachable: /);
    await page.close();
  });

  it('answers its API with the error line and a status', async () => {
    const res = await fetch(`${base}/api/stat?namespace=nope&kind=deploy`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'namespace "nope" not found' });
    const bad = await fetch(`${base}/api/stat?namespace=demo&kind=service`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain('"service" is not a resource kind');
  });
});
