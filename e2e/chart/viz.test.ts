// The chart's viz part, rendered by a real helm: off by default; with viz.enabled a Prometheus that
// scrapes the proxies of this control plane with Linkerd's viz labels, the tap service with its own
// proxy and identity, and the minimesh-viz ConfigMap the CLI reads; viz.prometheusUrl instead of the
// chart's Prometheus; the golden render (UPDATE_GOLDEN=1 regenerates).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createTestCerts, type CertFiles } from '../src/certs.js';
import { certArgs, findObject, helmTemplate, maskRender, parseManifests, type K8sObject } from '../src/chart.js';
import { ensureHelm } from '../src/tools.js';

const NS = 'minimesh';
let tmp: string;
let certs: CertFiles;

beforeAll(async () => {
  ensureHelm();
  tmp = mkdtempSync(join(tmpdir(), 'mm-chart-viz-'));
  certs = await createTestCerts(tmp);
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function render(extra: string[]): Promise<{ text: string; objects: K8sObject[] }> {
  const r = await helmTemplate(NS, [...certArgs(certs), ...extra]);
  expect(r.code, r.stderr).toBe(0);
  return { text: r.stdout, objects: parseManifests(r.stdout) };
}
const names = (objects: K8sObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`);

type Container = { name: string; image?: string; args?: string[]; env?: { name: string; value?: string }[] };
type PodSpec = { serviceAccountName?: string; initContainers?: Container[]; containers: Container[] };
const podSpec = (o: K8sObject): PodSpec =>
  (o as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
const podAnnotations = (o: K8sObject): Record<string, string> =>
  (o as unknown as { spec: { template: { metadata: { annotations?: Record<string, string> } } } }).spec.template
    .metadata.annotations ?? {};

describe('viz in the chart', () => {
  it('is off by default', async () => {
    const { objects } = await render([]);
    expect(names(objects).filter((n) => /prometheus|tap|viz/.test(n))).toEqual([]);
  });

  it('renders Prometheus, the tap service and the minimesh-viz ConfigMap with viz.enabled', async () => {
    const { objects } = await render(['--set', 'viz.enabled=true']);
    const viz = names(objects).filter((n) => /prometheus|tap|viz/.test(n));
    expect(viz.sort()).toEqual(
      [
        'ConfigMap/minimesh-viz',
        'ServiceAccount/minimesh-prometheus',
        'ClusterRole/minimesh-minimesh-prometheus',
        'ClusterRoleBinding/minimesh-minimesh-prometheus',
        'ConfigMap/minimesh-prometheus-config',
        'Service/minimesh-prometheus',
        'Deployment/minimesh-prometheus',
        'ServiceAccount/minimesh-tap',
        'ClusterRole/minimesh-minimesh-tap',
        'ClusterRoleBinding/minimesh-minimesh-tap',
        'Service/minimesh-tap',
        'Deployment/minimesh-tap',
      ].sort(),
    );
    const cm = findObject(objects, 'ConfigMap', 'minimesh-viz') as unknown as { data: Record<string, string> };
    expect(cm.data).toEqual({
      prometheusUrl: 'http://minimesh-prometheus.minimesh.svc.cluster.local:9090',
      tapUrl: 'http://minimesh-tap.minimesh.svc.cluster.local:8089',
      tapIdentity: 'minimesh-tap.minimesh.serviceaccount.identity.minimesh.cluster.local',
    });
  });

  it("Prometheus keeps only this control plane's proxies' admin ports and adds Linkerd's viz labels", async () => {
    const { objects } = await render(['--set', 'viz.enabled=true', '--set', 'viz.prometheus.scrapeInterval=5s']);
    const cm = findObject(objects, 'ConfigMap', 'minimesh-prometheus-config') as unknown as {
      data: Record<string, string>;
    };
    const config = parse(cm.data['prometheus.yml'] ?? '') as {
      global: Record<string, string>;
      scrape_configs: Array<{
        job_name: string;
        kubernetes_sd_configs: Array<{ role: string }>;
        relabel_configs: Array<{ source_labels?: string[]; action?: string; regex?: string; target_label?: string }>;
      }>;
    };
    expect(config.global.scrape_interval).toBe('5s');
    const job = config.scrape_configs[0]!;
    expect(job.job_name).toBe('minimesh-proxy');
    expect(job.kubernetes_sd_configs).toEqual([{ role: 'pod' }]);
    expect(job.relabel_configs[0]).toEqual({
      source_labels: [
        '__meta_kubernetes_pod_container_name',
        '__meta_kubernetes_pod_container_port_name',
        '__meta_kubernetes_pod_label_minimesh_io_control_plane_ns',
      ],
      action: 'keep',
      regex: '^minimesh-proxy;minimesh-admin;minimesh$',
    });
    const targets = job.relabel_configs.map((r) => r.target_label).filter(Boolean);
    for (const l of ['namespace', 'pod', 'deployment', 'replicaset', 'statefulset', 'daemonset', 'k8s_job'])
      expect(targets).toContain(l);
    // The deployment is the ReplicaSet's name less the pod-template-hash, only when the pod has one.
    const deploy = job.relabel_configs.find((r) => r.target_label === 'deployment')!;
    const re = new RegExp(`^(?:${deploy.regex})$`);
    expect('ReplicaSet;web-7d9c5f;7d9c5f'.replace(re, '$1')).toBe('web');
    expect(re.test('ReplicaSet;web-7d9c5f;')).toBe(false);
    // The proxy's admin port is named minimesh-admin in the chart's proxies and the injector's.
    const tap = findObject(objects, 'Deployment', 'minimesh-tap');
    const proxy = podSpec(tap).initContainers?.find((c) => c.name === 'minimesh-proxy') as unknown as {
      ports: Array<{ name: string; containerPort: number }>;
    };
    expect(proxy.ports).toContainEqual({ name: 'minimesh-admin', containerPort: 4191, protocol: 'TCP' });
  });

  it('runs Prometheus unmeshed as nobody, the image scripts/images.sh builds, with a checksum of its config', async () => {
    const { objects } = await render(['--set', 'viz.enabled=true']);
    const prom = findObject(objects, 'Deployment', 'minimesh-prometheus');
    const spec = podSpec(prom);
    expect(spec.initContainers).toBeUndefined();
    expect(spec.containers.map((c) => c.name)).toEqual(['prometheus']);
    expect(spec.containers[0]?.image).toBe('prom/prometheus:v3.16.0');
    expect(spec.containers[0]?.args).toContain('--config.file=/etc/prometheus/prometheus.yml');
    expect(podAnnotations(prom)['minimesh.io/inject']).toBe('disabled');
    const other = findObject(
      (await render(['--set', 'viz.enabled=true', '--set', 'viz.prometheus.scrapeInterval=30s'])).objects,
      'Deployment',
      'minimesh-prometheus',
    );
    expect(podAnnotations(other)['checksum/config']).not.toBe(podAnnotations(prom)['checksum/config']);
  });

  it('runs the tap service meshed, as the identity the ConfigMap names', async () => {
    const { objects } = await render(['--set', 'viz.enabled=true', '--set', 'viz.tap.maxLimit=500']);
    const tap = findObject(objects, 'Deployment', 'minimesh-tap');
    const spec = podSpec(tap);
    expect(spec.serviceAccountName).toBe('minimesh-tap');
    expect(spec.initContainers?.map((c) => c.name)).toEqual(['minimesh-init', 'minimesh-proxy']);
    const app = spec.containers.find((c) => c.name === 'tap')!;
    expect(app.image).toBe('ghcr.io/minimesh/viz:0.1.0');
    expect(app.args).toEqual(
      expect.arrayContaining(['--addr=0.0.0.0:8089', '--controller-namespace=minimesh', '--max-limit=500']),
    );
    const env = new Map(spec.initContainers?.[1]?.env?.map((e) => [e.name, e.value]));
    expect(env.get('MINIMESH_PROXY_IDENTITY_LOCAL_NAME')).toBe(
      '$(_pod_sa).$(_pod_ns).serviceaccount.identity.minimesh.cluster.local',
    );
  });

  it("tells every proxy the tap service's identity (the injector's through the mesh configuration)", async () => {
    const tapId = 'minimesh-tap.minimesh.serviceaccount.identity.minimesh.cluster.local';
    const proxyEnv = (objects: K8sObject[], deployment: string) =>
      new Map(
        podSpec(findObject(objects, 'Deployment', deployment))
          .initContainers?.find((c) => c.name === 'minimesh-proxy')
          ?.env?.map((e) => [e.name, e.value]),
      );
    const config = (objects: K8sObject[]) =>
      JSON.parse(
        (findObject(objects, 'ConfigMap', 'minimesh-config') as unknown as { data: Record<string, string> }).data[
          'config.json'
        ] ?? '{}',
      ) as {
        proxy: { tapSvcName: string };
      };
    const on = (await render(['--set', 'viz.enabled=true'])).objects;
    expect(proxyEnv(on, 'minimesh-destination').get('MINIMESH_PROXY_TAP_SVC_NAME')).toBe(tapId);
    expect(proxyEnv(on, 'minimesh-tap').get('MINIMESH_PROXY_TAP_SVC_NAME')).toBe(tapId);
    expect(config(on).proxy.tapSvcName).toBe(tapId);
    const off = (await render([])).objects;
    expect(proxyEnv(off, 'minimesh-destination').has('MINIMESH_PROXY_TAP_SVC_NAME')).toBe(false);
    expect(config(off).proxy.tapSvcName).toBe('');
  });

  it('uses viz.prometheusUrl instead of installing Prometheus', async () => {
    const url = 'http://prometheus.monitoring.svc.cluster.local:9090';
    const { objects } = await render(['--set', 'viz.enabled=true', '--set', `viz.prometheusUrl=${url}`]);
    expect(names(objects).filter((n) => n.includes('prometheus'))).toEqual([]);
    const cm = findObject(objects, 'ConfigMap', 'minimesh-viz') as unknown as { data: Record<string, string> };
    expect(cm.data.prometheusUrl).toBe(url);
  });

  it('refuses a prometheusUrl that is not an http(s) URL', async () => {
    const r = await helmTemplate(NS, [...certArgs(certs), '--set', 'viz.prometheusUrl=prometheus:9090']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("at '/viz/prometheusUrl': 'prometheus:9090' does not match pattern");
  });

  it('matches its golden file (UPDATE_GOLDEN=1 regenerates)', async () => {
    const { text } = await render(['--set', 'viz.enabled=true']);
    const masked = maskRender(text);
    const file = join(import.meta.dirname, 'golden', 'viz.yaml');
    if (process.env.UPDATE_GOLDEN === '1' || !existsSync(file)) writeFileSync(file, masked);
    expect(masked).toBe(readFileSync(file, 'utf8'));
  });
});
