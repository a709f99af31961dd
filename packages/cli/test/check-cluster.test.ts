// `minimesh check` against a stand-in control plane in a namespace of our own (the real chart is
// the e2e suite's): three Deployments whose pods answer /ready on the components' admin ports
// (the http-echo fixture), the trust-roots ConfigMap and issuer Secret from createMeshCerts, and a
// webhook configuration that matches no object. Then the issuer is swapped for one from another
// root, and check must fail on the chain.
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
import { createMeshCerts } from '../src/certs.js';

const bin = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'main.js');
const ns = `mm-cli-cp-${randomBytes(3).toString('hex')}`;
const webhookName = `minimesh-injector-webhook-config-${ns}`;
let cluster: ClusterInfo;
const createdCrds: string[] = [];

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
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

const COMPONENTS = [
  ['destination', 9996],
  ['identity', 9990],
  ['injector', 9995],
] as const;

function deployment(component: string, port: number): KubeObject {
  const labels = { 'minimesh.io/control-plane-component': component, 'minimesh.io/control-plane-ns': ns };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `minimesh-${component}`, namespace: ns, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: component,
              image: 'minimesh.test/http-echo:e2e',
              env: [{ name: 'PORT', value: String(port) }],
              ports: [{ containerPort: port, name: 'admin-http' }],
              readinessProbe: { httpGet: { path: '/ready', port }, periodSeconds: 1 },
            },
            // The policy controller is the destination pod's second container (admin port 9990).
            ...(component === 'destination'
              ? [
                  {
                    name: 'policy',
                    image: 'minimesh.test/http-echo:e2e',
                    env: [{ name: 'PORT', value: '9990' }],
                    ports: [{ containerPort: 9990, name: 'policy-admin' }],
                    readinessProbe: { httpGet: { path: '/ready', port: 9990 }, periodSeconds: 1 },
                  },
                ]
              : []),
          ],
        },
      },
    },
  } as KubeObject;
}

beforeAll(async () => {
  cluster = await ensureCluster();
  await createNamespace(ns);
  const api = adminClient();
  // The policy CRDs, as the chart installs them (left in place if they were there already).
  for (const crd of policyCrds()) {
    const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
    if (await api.get(path)) continue;
    await api.request('PATCH', `${path}?fieldManager=cli-test&force=true`, crd, 'application/apply-patch+yaml');
    createdCrds.push(path);
  }
  // The issuer expires in 30 days: inside check's 60-day warning window.
  const certs = await createMeshCerts({ issuerLifetimeHours: 30 * 24 });
  await api.request('POST', `/api/v1/namespaces/${ns}/configmaps`, {
    metadata: { name: 'minimesh-identity-trust-roots' },
    data: { 'ca-bundle.crt': certs.caCrt },
  });
  await api.request('POST', `/api/v1/namespaces/${ns}/secrets`, {
    metadata: { name: 'minimesh-identity-issuer' },
    data: {
      'crt.pem': Buffer.from(certs.issuerCrt).toString('base64'),
      'key.pem': Buffer.from(certs.issuerKey).toString('base64'),
    },
  });
  // Selects no object and ignores failures: it cannot affect anyone else's pods.
  await api.request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
    metadata: { name: webhookName },
    webhooks: [
      {
        name: 'minimesh-injector.minimesh.io',
        clientConfig: {
          service: { name: 'minimesh-injector', namespace: ns, path: '/', port: 443 },
          caBundle: Buffer.from(certs.caCrt).toString('base64'),
        },
        rules: [
          { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' },
        ],
        objectSelector: { matchLabels: { 'mm-cli-test-never': ns } },
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  });
  for (const [component, port] of COMPONENTS)
    await api.request('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, deployment(component, port));
  // Wait until every Deployment reports an available replica.
  const deadline = Date.now() + 120_000;
  for (let i = 0; i < 400 && Date.now() < deadline; i++) {
    const ready = await Promise.all(
      COMPONENTS.map(
        async ([c]) =>
          ((await api.get(`/apis/apps/v1/namespaces/${ns}/deployments/minimesh-${c}`))?.status?.availableReplicas ??
            0) >= 1,
      ),
    );
    if (ready.every(Boolean)) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error('the stand-in control plane did not become available within 120 s');
}, 300_000);

afterAll(async () => {
  for (const path of createdCrds)
    await adminClient()
      .request('DELETE', path)
      .catch(() => undefined);
  await adminClient()
    .request('DELETE', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${webhookName}`)
    .catch(() => undefined);
  await adminClient()
    .request('DELETE', `/api/v1/namespaces/${ns}`)
    .catch(() => undefined);
});

describe('minimesh check against a stand-in control plane', () => {
  it('passes with one warning: the issuer expires within 60 days', async () => {
    const r = await run(['check', '--namespace', ns, '--kubeconfig', cluster.kubeconfigPath]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('✔ can query the Kubernetes API');
    for (const [c] of COMPONENTS) {
      expect(r.stdout).toContain(`✔ ${c}: Deployment minimesh-${c} exists and is available`);
      expect(r.stdout).toMatch(new RegExp(`✔ ${c} admin /ready \\(minimesh-${c}-`));
    }
    expect(r.stdout).toContain(`✔ MutatingWebhookConfiguration ${webhookName} exists`);
    expect(r.stdout).toContain('✔ webhook minimesh-injector.minimesh.io has a CA bundle');
    expect(r.stdout).toContain('✔ issuer certificate is issued by the trust anchor');
    expect(r.stdout).toContain('✔ issuer key matches the issuer certificate');
    expect(r.stdout).toMatch(
      /‼ issuer certificate is valid for at least 60 days\n {4}identity\.minimesh\.cluster\.local expires on .* \(in (29|30) days\)/,
    );
    expect(r.stdout).toContain('✔ CRD servers.policy.minimesh.io is installed');
    expect(r.stdout).toMatch(/✔ policy controller in minimesh-destination-\S+ is ready/);
    expect(r.stdout).not.toContain('✖');
    expect(r.stdout).toMatch(/Status check results are ✔ \(1 warning\)/);
    expect(r.code).toBe(0);
  });

  it('--json carries the same results', async () => {
    const r = await run([
      'check',
      '--namespace',
      ns,
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--json',
      '--warn-days',
      '7',
    ]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { ok: boolean; results: { status: string }[] };
    expect(out.ok).toBe(true);
    expect(out.results.filter((x) => x.status !== 'ok')).toEqual([]);
  });

  it('fails when the issuer does not chain to the trust anchor', async () => {
    const other = await createMeshCerts();
    await adminClient().request(
      'PATCH',
      `/api/v1/namespaces/${ns}/secrets/minimesh-identity-issuer`,
      {
        data: {
          'crt.pem': Buffer.from(other.issuerCrt).toString('base64'),
          'key.pem': Buffer.from(other.issuerKey).toString('base64'),
        },
      },
      'application/merge-patch+json',
    );
    const r = await run(['check', '--namespace', ns, '--kubeconfig', cluster.kubeconfigPath]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('✖ issuer certificate is issued by the trust anchor');
    expect(r.stdout).toContain('✔ issuer key matches the issuer certificate');
  });
});
