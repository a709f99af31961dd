// The scale machinery, small (issue 29; docs/scale.md): 200 pods on simulated nodes (kwok) of the local
// cluster, minimesh-destination running against the real API server, and linkerd2-proxy-api Go clients
// holding one Get stream per Service for each of 3 client proxies, while rolling updates replace pods.
// Once the churn has settled, every stream's view must equal the ready endpoints of the API's
// EndpointSlices: a lost remove, a missed add or a stale snapshot fails it. The same code runs the
// 500–5,000-pod bench (npm run bench -- scale), so this keeps it from rotting. Local cluster only (kwok
// runs beside its API server): not in specs.json, which the k3d run shares.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adminClient,
  applyWorkload,
  createNamespace,
  ensureCluster,
  ensureSimulatedNodes,
  removeSimulatedNodes,
  startChurn,
  workloadStatus,
  type KubeObject,
  type WorkloadLayout,
} from '@minimesh/local-cluster';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDriven, type Driven } from '../../bench/lib/driven.js';
import { minimesh, type Started } from '../../bench/scale/programs.js';
import { apiEndpoints, compareViews, type Views } from '../../bench/scale/views.js';

const PODS = 200;
const CLIENTS = 3;
const PREFIX = 'mm-e2escale';
const CP_NS = `${PREFIX}-cp`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const admin = adminClient();
let dir = '';
let layout: WorkloadLayout;
let destination: Started | undefined;
let clients: Driven | undefined;
const children: ChildProcess[] = [];

async function ask<T>(d: Driven, m: object, timeoutMs = 60_000): Promise<T> {
  d.send(m);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      d.next<T>(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the stream client did not answer ${JSON.stringify(m).slice(0, 80)}`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  const cluster = await ensureCluster();
  dir = mkdtempSync(join(tmpdir(), 'mm-e2e-scale-'));
  await ensureSimulatedNodes({ nodes: 2 });
  layout = await applyWorkload(
    { pods: PODS, podsPerDeployment: 10, deploymentsPerNamespace: 10, prefix: PREFIX, policyGroups: [] },
    { timeoutMs: 240_000 },
  );
  await createNamespace(CP_NS);
  destination = await minimesh.start('destination', {
    kubeconfig: cluster.kubeconfigPath,
    controllerNamespace: CP_NS,
    issuerCrt: '',
    issuerKey: '',
    trustAnchors: '',
    dir,
    podName: 'e2e-scale-destination',
  });
  children.push(destination.child);
  clients = startDriven({ go: 'scale-streams', script: '', label: 'scale clients', requireGo: true });
  children.push(clients.child);
  await clients.next();
}, 600_000);

afterAll(async () => {
  if (clients) clients.send({ cmd: 'exit' });
  await destination?.stop();
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  // the workload at size 0 deletes its namespaces; then the simulated nodes go
  await applyWorkload({ pods: 0, prefix: PREFIX, policyGroups: [] }, { timeoutMs: 60_000 }).catch(() => undefined);
  await admin.request('DELETE', `/api/v1/namespaces/${CP_NS}`).catch(() => undefined);
  await removeSimulatedNodes().catch(() => undefined);
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 180_000);

describe(`${PODS} simulated pods: destination's Get streams against the API server`, () => {
  it('every stream ends with the view the EndpointSlices hold, after rolling updates', async () => {
    const list = await admin.request<{ items: KubeObject[] }>(
      'GET',
      `/api/v1/services?labelSelector=${encodeURIComponent('minimesh.io/scale-workload=true')}`,
    );
    const services = list.items
      .filter((s) => String(s.metadata.namespace).startsWith(`${PREFIX}-`))
      .map((s) => ({
        authority: `${s.metadata.name}.${s.metadata.namespace}.svc.cluster.local:80`,
        ip: s.spec.clusterIP,
        port: 80,
      }));
    expect(services.length).toBe(layout.deployments.length);
    const opened = await ask<{ ready: Record<string, number> }>(clients!, {
      cmd: 'open',
      destination: [`127.0.0.1:${destination!.grpcPort}`],
      policy: [],
      clients: CLIENTS,
      node: 'kwok-0',
      services,
      pods: [],
    });
    expect(opened.ready.get).toBe(CLIENTS * services.length);

    // before any change: the snapshot is right
    const before = compareViews(
      (await ask<{ views: Views }>(clients!, { cmd: 'views' })).views,
      await apiEndpoints(admin, `${PREFIX}-`),
    );
    expect(before, before.examples.join('\n')).toMatchObject({ diverging: 0, unwatched: 0 });

    // churn: every Deployment rolled once (20 pods/s), then settled
    const churn = startChurn(layout, { podsPerSecond: 20, admin });
    await sleep(10_000);
    await churn.stop();
    expect(churn.restarts).toBeGreaterThanOrEqual(layout.deployments.length);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const st = await workloadStatus(admin, PREFIX);
      if (st.settled === st.deployments) break;
      if (Date.now() > deadline) throw new Error(`the workload did not settle: ${JSON.stringify(st)}`);
      await sleep(1000);
    }
    // the API has settled; give the streams a moment, then compare (retrying for up to 10 s: the
    // comparison must hold once updates have arrived, not at an arbitrary instant)
    let after = compareViews(
      (await ask<{ views: Views }>(clients!, { cmd: 'views' })).views,
      await apiEndpoints(admin, `${PREFIX}-`),
    );
    for (let i = 0; i < 20 && after.diverging > 0; i++) {
      await sleep(500);
      after = compareViews(
        (await ask<{ views: Views }>(clients!, { cmd: 'views' })).views,
        await apiEndpoints(admin, `${PREFIX}-`),
      );
    }
    expect(after, after.examples.join('\n')).toMatchObject({ diverging: 0, missing: 0, extra: 0, unwatched: 0 });
    const { stats } = await ask<{ stats: Record<string, { errors: number }> }>(clients!, { cmd: 'stats' });
    expect(stats.get?.errors).toBe(0);
  }, 240_000);
});
