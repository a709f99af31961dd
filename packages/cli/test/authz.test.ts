// `minimesh authz` and the policy part of `minimesh explain` against the real API server: a namespace
// with two pods (bound to a node that does not exist, so nothing runs them), a Server on their HTTP
// port, an AuthorizationPolicy for one service account, a policy whose Server does not exist and a
// second Server on the same port. The answers come from the policy controller's index over the
// objects as the API server returns them; the controller's settings from a stand-in Deployment's flags.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  adminClient,
  createNamespace,
  ensureCluster,
  type ClusterInfo,
  type KubeObject,
} from '@minimesh/local-cluster';
import { policyCrds } from '@minimesh/policy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'dist', 'main.js');
const natFile = join(here, '..', '..', 'proxy-init', 'src', 'testdata', 'linkerd-args-nat.restore');
const suffix = randomBytes(3).toString('hex');
const ns = `mm-cli-authz-${suffix}`;
const cpNs = `mm-cli-authz-cp-${suffix}`;
const G = 'policy.minimesh.io';
const createdCrds: string[] = [];
let cluster: ClusterInfo;

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args, '--kubeconfig', cluster.kubeconfigPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

const pod = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, labels: { app: 'web' } },
  spec: {
    nodeName: 'mm-not-scheduled',
    serviceAccountName: 'default',
    containers: [
      {
        name: 'app',
        image: 'minimesh.test/none:e2e',
        ports: [{ name: 'http', containerPort: 8080 }],
        readinessProbe: { httpGet: { path: '/healthz', port: 'http' } },
      },
    ],
  },
});

async function post(path: string, obj: unknown): Promise<void> {
  await adminClient().request('POST', path, obj);
}

beforeAll(async () => {
  cluster = await ensureCluster();
  const api = adminClient();
  for (const crd of policyCrds()) {
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
    if (await api.get(path)) continue;
    await api.request('PATCH', `${path}?fieldManager=cli-test&force=true`, crd, 'application/apply-patch+yaml');
    createdCrds.push(path);
  }
  for (let i = 0; i < 100; i++) {
    const all = await Promise.all(
      policyCrds().map((c) =>
        api.get<KubeObject>(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${c.metadata.name}`),
      ),
    );
    if (
      all.every((c) =>
        (c?.status?.conditions ?? []).some(
          (x: { type: string; status: string }) => x.type === 'Established' && x.status === 'True',
        ),
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 200));
  }
  await createNamespace(ns);
  await createNamespace(cpNs);
  // The controller's settings, as the chart renders them: default policy deny.
  await post(`/apis/apps/v1/namespaces/${cpNs}/deployments`, {
    metadata: { name: 'minimesh-destination', namespace: cpNs },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: 'x' } },
      template: {
        metadata: { labels: { app: 'x' } },
        spec: {
          containers: [
            {
              name: 'policy',
              image: 'minimesh.test/none:e2e',
              args: ['--default-policy=deny', '--cluster-networks=10.0.0.0/8'],
            },
          ],
        },
      },
    },
  });
  await post(`/api/v1/namespaces/${ns}/pods`, pod('web-1'));
  await post(`/apis/${G}/v1beta3/namespaces/${ns}/servers`, {
    apiVersion: `${G}/v1beta3`,
    kind: 'Server',
    metadata: { name: 'web-http', namespace: ns },
    spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http', proxyProtocol: 'HTTP/1' },
  });
  // Created after web-http: it loses the port to the older Server.
  await new Promise((r) => setTimeout(r, 1100));
  await post(`/apis/${G}/v1beta3/namespaces/${ns}/servers`, {
    apiVersion: `${G}/v1beta3`,
    kind: 'Server',
    metadata: { name: 'web-http-too', namespace: ns },
    spec: { podSelector: { matchLabels: { app: 'web' } }, port: 8080 },
  });
  await post(`/apis/${G}/v1alpha1/namespaces/${ns}/authorizationpolicies`, {
    apiVersion: `${G}/v1alpha1`,
    kind: 'AuthorizationPolicy',
    metadata: { name: 'client-only', namespace: ns },
    spec: {
      targetRef: { group: G, kind: 'Server', name: 'web-http' },
      requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
    },
  });
  await post(`/apis/${G}/v1alpha1/namespaces/${ns}/authorizationpolicies`, {
    apiVersion: `${G}/v1alpha1`,
    kind: 'AuthorizationPolicy',
    metadata: { name: 'to-nowhere', namespace: ns },
    spec: { targetRef: { group: G, kind: 'Server', name: 'no-such-server' }, requiredAuthenticationRefs: [] },
  });
}, 300_000);

afterAll(async () => {
  const api = adminClient();
  for (const n of [ns, cpNs]) await api.request('DELETE', `/api/v1/namespaces/${n}`).catch(() => undefined);
  for (const path of createdCrds) await api.request('DELETE', path).catch(() => undefined);
});

describe('minimesh authz on the API server', () => {
  it("lists the pod's port, its Server, routes, who is admitted, and the Server that loses the port", async () => {
    const r = await run(['authz', `${ns}/web-1`, '--namespace', cpNs]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${ns}: pod web-1`);
    expect(r.stdout).toMatch(/port 8080: Server web-http, HTTP\/1/);
    expect(r.stdout).toMatch(/admits .*client-only.*client\.[^ ]*serviceaccount/);
    expect(r.stdout).toContain('Server web-http-too also selects this port and is ignored for it');
    // The probe route stays open whatever the policy.
    expect(r.stdout).toMatch(/probe/);
  });

  it('--json carries the same report', async () => {
    const r = await run(['authz', `${ns}/web-1`, '--namespace', cpNs, '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as {
      reports: Array<{ pods: string[]; ports: Array<{ port: number; server: string }> }>;
    };
    expect(out.reports[0]?.pods).toEqual(['web-1']);
    expect(out.reports[0]?.ports.map((p) => p.port)).toEqual([8080]);
    const y = await run(['authz', `${ns}/web-1`, '--namespace', cpNs, '-o', 'yaml']);
    expect(y.code).toBe(0);
    expect(y.stdout).toMatch(/^reports:\n/);
    expect(parseYaml(y.stdout)).toEqual(out);
    const bad = await run(['authz', `${ns}/web-1`, '-o', 'wide']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/-o "wide" is not valid: expected table, json, yaml/);
  });

  it('bad input: an unknown workload exits 1 with one line, a malformed name exits 2', async () => {
    const missing = await run(['authz', `${ns}/ghost`, '--namespace', cpNs]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe(`minimesh authz: no Deployment, StatefulSet, DaemonSet or pod ${ns}/ghost`);
    const bad = await run(['authz', 'Not_A/Name']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/is not valid: expected <namespace>\/<workload>/);
    const badPort = await run(['authz', `${ns}/web-1`, '--port', '70000']);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toMatch(/--port "70000" is not valid/);
  });
});

describe('minimesh explain: the authorization part', () => {
  const explain = (extra: string[]) =>
    run([
      'explain',
      `${ns}/web-1`,
      '--port',
      '8080',
      '--nat-file',
      natFile,
      '--control-plane-namespace',
      cpNs,
      ...extra,
    ]);

  it('admits the client service account by the AuthorizationPolicy', async () => {
    const id = `client.${ns}.serviceaccount.identity.${cpNs}.cluster.local`;
    const r = await explain(['--identity', id, '--request', 'GET /orders']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Authorization (admitted):');
    expect(r.stdout).toMatch(
      /GET \/orders takes default route default; from a meshed client .* admitted by AuthorizationPolicy client-only/,
    );
  });

  it('forbids an unmeshed client (403) and names what would admit it', async () => {
    const r = await explain(['--request', 'GET /orders']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Authorization (forbidden):');
    expect(r.stdout).toMatch(/403/);
  });

  it('bad input: a malformed --request exits 2', async () => {
    const r = await explain(['--request', 'orders']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--request "orders" is not valid: expected "METHOD \/path"/);
  });
});
