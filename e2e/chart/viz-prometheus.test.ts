// The chart's Prometheus configuration, run by the real Prometheus (the binary scripts/images.sh builds
// into the cache) against the local cluster's real API server: Kubernetes service discovery finds the
// pods of a Deployment and a Job whose minimesh-proxy container has the minimesh-admin port,
// keeps only this control plane's, and labels them as Linkerd's viz Prometheus does. The pods are API
// objects only (schedulerName: none, their status written here); scrapes are pointed at 127.0.0.1:9, so
// nothing leaves loopback.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { adminClient, createNamespace, ensureCluster, type ClusterInfo } from '@minimesh/local-cluster';
import { createTestCerts } from '../src/certs.js';
import { certArgs, findObject, renderObjects } from '../src/chart.js';

const PROMETHEUS = join(
  process.env.MINIMESH_CACHE ?? join(homedir(), '.cache', 'minimesh'),
  'prometheus',
  'v3.16.0',
  'prometheus',
);
const suffix = randomBytes(3).toString('hex');
const ns = `mm-viz-prom-${suffix}`;
const cpNs = `mm-viz-cp-${suffix}`;
let cluster: ClusterInfo;
let tmp: string;
let prom: ChildProcess | undefined;
let promUrl = '';

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

/** A pod template as the injector leaves it: the proxy as a native sidecar with the admin port named minimesh-admin. */
function template(app: string, controlPlane: string, meshed = true) {
  return {
    metadata: { labels: { app, 'minimesh.io/control-plane-ns': controlPlane, 'minimesh.io/workload-ns': ns } },
    spec: {
      schedulerName: 'none',
      initContainers: meshed
        ? [
            {
              name: 'minimesh-proxy',
              image: 'ghcr.io/minimesh/proxy:0.1.0',
              restartPolicy: 'Always',
              ports: [
                { name: 'minimesh-proxy', containerPort: 4143 },
                { name: 'minimesh-admin', containerPort: 4191 },
              ],
            },
          ]
        : [],
      containers: [
        { name: 'app', image: 'minimesh.test/http-echo:e2e', ports: [{ name: 'http', containerPort: 8080 }] },
      ],
    },
  };
}

beforeAll(async () => {
  if (!existsSync(PROMETHEUS)) throw new Error(`${PROMETHEUS} is missing: run bash scripts/images.sh build --only=viz`);
  cluster = await ensureCluster();
  tmp = mkdtempSync(join(tmpdir(), 'mm-viz-prom-'));
  await createNamespace(ns);
  const admin = adminClient();
  const deploy = (name: string, cp: string, meshed = true) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: template(name, cp, meshed) },
  });
  await admin.request('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, deploy('web', cpNs));
  await admin.request('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, deploy('plain', cpNs, false));
  await admin.request('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, deploy('other', 'another-control-plane'));
  // A Job's pod (the controller-manager here runs the job controller, not the statefulset one).
  const jobTemplate = template('migrate', cpNs);
  await admin.request('POST', `/apis/batch/v1/namespaces/${ns}/jobs`, {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'migrate', namespace: ns },
    spec: { backoffLimit: 0, template: { ...jobTemplate, spec: { ...jobTemplate.spec, restartPolicy: 'Never' } } },
  });
  // The controllers make the pods; no scheduler takes them. Give each an IP, as a kubelet would.
  let pods: Array<{ metadata: { name: string } }> = [];
  for (let i = 0; i < 100 && pods.length < 4; i++) {
    pods = (await admin.request<{ items: typeof pods }>('GET', `/api/v1/namespaces/${ns}/pods`)).items;
    if (pods.length < 4) await new Promise((r) => setTimeout(r, 200));
  }
  expect(pods.length).toBe(4);
  let octet = 10;
  for (const p of pods) {
    await admin.request(
      'PATCH',
      `/api/v1/namespaces/${ns}/pods/${p.metadata.name}/status`,
      { status: { phase: 'Running', podIP: `10.23.250.${octet}`, podIPs: [{ ip: `10.23.250.${octet}` }] } },
      'application/merge-patch+json',
    );
    octet++;
  }

  // The chart's configuration, for a control plane in cpNs, told to discover only the test namespace
  // through the admin kubeconfig, and to scrape nothing but a closed loopback port.
  const certs = await createTestCerts(join(tmp, 'certs'));
  const objects = await renderObjects(cpNs, [...certArgs(certs), '--set', 'viz.enabled=true']);
  const cm = findObject(objects, 'ConfigMap', 'minimesh-prometheus-config') as unknown as {
    data: Record<string, string>;
  };
  const config = parse(cm.data['prometheus.yml'] ?? '') as {
    global: Record<string, string>;
    scrape_configs: Array<{ kubernetes_sd_configs: unknown[]; relabel_configs: unknown[] }>;
  };
  config.global.scrape_interval = '1h';
  config.global.scrape_timeout = '1s';
  const job = config.scrape_configs[0]!;
  job.kubernetes_sd_configs = [{ role: 'pod', kubeconfig_file: cluster.kubeconfigPath, namespaces: { names: [ns] } }];
  job.relabel_configs.push({ target_label: '__address__', replacement: '127.0.0.1:9' });
  writeFileSync(join(tmp, 'prometheus.yml'), stringify(config));
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prom = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(tmp, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(tmp, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  prom.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`${promUrl}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (prom.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`prometheus did not become ready: ${stderr.slice(-2000)}`);
}, 300_000);

afterAll(async () => {
  prom?.kill('SIGKILL');
  if (cluster)
    await adminClient()
      .request('DELETE', `/api/v1/namespaces/${ns}`)
      .catch(() => undefined);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("viz's Prometheus against the real API server", () => {
  it("keeps this control plane's proxies' admin ports and labels them as Linkerd's viz does", async () => {
    type Target = { labels: Record<string, string>; discoveredLabels: Record<string, string> };
    let targets: Target[] = [];
    for (let i = 0; i < 150 && targets.length < 2; i++) {
      const body = (await (await fetch(`${promUrl}/api/v1/targets?state=active`)).json()) as {
        data: { activeTargets: Target[] };
      };
      targets = body.data.activeTargets;
      if (targets.length < 2) await new Promise((r) => setTimeout(r, 200));
    }
    const byPod = Object.fromEntries(targets.map((t) => [t.labels.pod ?? '', t.labels]));
    // web-<hash>-<suffix> (Deployment → ReplicaSet → pod) and migrate-<suffix> (Job → pod); not plain
    // (no proxy) nor other (another control plane).
    expect(
      Object.keys(byPod)
        .map((p) => p.split('-')[0])
        .sort(),
    ).toEqual(['migrate', 'web']);
    const web = Object.entries(byPod).find(([p]) => p.startsWith('web-'))![1];
    const hash = web.pod_template_hash ?? '';
    expect(hash).toMatch(/^[a-z0-9]+$/);
    expect(web).toMatchObject({
      job: 'minimesh-proxy',
      namespace: ns,
      deployment: 'web',
      replicaset: `web-${hash}`,
      app: 'web',
      control_plane_ns: cpNs,
      workload_ns: ns,
    });
    expect(web.k8s_job).toBeUndefined();
    // Prometheus keeps `job` for the scrape job: the Kubernetes Job is k8s_job.
    const migrate = Object.entries(byPod).find(([p]) => p.startsWith('migrate-'))![1];
    expect(migrate).toMatchObject({
      job: 'minimesh-proxy',
      namespace: ns,
      k8s_job: 'migrate',
      app: 'migrate',
      control_plane_ns: cpNs,
    });
    expect(migrate.deployment).toBeUndefined();
    expect(migrate.replicaset).toBeUndefined();
    // No minimesh.io/ label is left with its prefix, and no Kubernetes meta label stays on the series.
    for (const t of targets)
      expect(Object.keys(t.labels).filter((k) => k.startsWith('minimesh_io') || k.startsWith('__'))).toEqual([]);
  });
});
