// The built `minimesh` against the local cluster: a pod built with the injector's own patch runs
// proxy-init for real; `minimesh explain` reads that pod's live nat table with an ephemeral debug
// container (NET_ADMIN, NET_RAW) and says where connections go. `minimesh check` runs against a namespace of our own
// without the chart (the chart belongs to the e2e suite), and must fail there, naming what is missing.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import jsonpatch from 'fast-json-patch';
import { defaultMeshConfig } from '@minimesh/config';
import { createPatch, type PodLike } from '@minimesh/injector';
import {
  adminClient,
  createNamespace,
  ensureCluster,
  type ClusterInfo,
  type KubeObject,
} from '@minimesh/local-cluster';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const bin = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'main.js');
const ns = `mm-cli-${randomBytes(3).toString('hex')}`;
let cluster: ClusterInfo;

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

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (let i = 0; Date.now() < deadline && i < 1000; i++) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

beforeAll(async () => {
  cluster = await ensureCluster();
  await createNamespace(ns);
  // An app pod as a user writes it, meshed by the webhook's own patch function.
  const pod: PodLike = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: ns, annotations: { 'minimesh.io/inject': 'enabled' } },
    spec: {
      containers: [
        {
          name: 'web',
          image: 'minimesh.test/http-echo:e2e',
          ports: [{ containerPort: 8080, name: 'http' }],
          securityContext: { runAsUser: 1000 },
        },
      ],
    },
  } as PodLike;
  const { patch, skipped } = createPatch(pod, { config: defaultMeshConfig(), namespace: ns });
  expect(skipped).toBeUndefined();
  const meshed = jsonpatch.applyPatch(structuredClone(pod), patch as jsonpatch.Operation[], true, false).newDocument;
  await adminClient().request('POST', `/api/v1/namespaces/${ns}/pods`, meshed);
  await adminClient().request('POST', `/api/v1/namespaces/${ns}/services`, {
    metadata: { name: 'web' },
    spec: { ports: [{ port: 80, targetPort: 8080 }] },
  });
  // proxy-init is the first init container: once it has exited 0, the nat rules are in place.
  await waitFor('minimesh-init to complete', async () => {
    const p = (await adminClient().get(`/api/v1/namespaces/${ns}/pods/web`)) as KubeObject | undefined;
    const init = (
      p?.status?.initContainerStatuses as { name: string; state?: { terminated?: { exitCode: number } } }[] | undefined
    )?.find((s) => s.name === 'minimesh-init');
    const term = init?.state?.terminated;
    if (term && term.exitCode !== 0) throw new Error(`minimesh-init exited ${term.exitCode}`);
    return term ? true : undefined;
  });
}, 300_000);

afterAll(async () => {
  await adminClient()
    .request('DELETE', `/api/v1/namespaces/${ns}`)
    .catch(() => undefined);
});

describe('minimesh explain on a live pod', () => {
  it('inbound to 8080: the live nat table redirects it to the proxy on 4143', async () => {
    const r = await run(['explain', `${ns}/web`, '--port', '8080', '--kubeconfig', cluster.kubeconfigPath]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${ns}/web: redirected to the proxy's inbound listener on port 4143`);
    expect(r.stdout).toContain(
      '(nat rules from an ephemeral debug container (NET_ADMIN, NET_RAW) running iptables-save in the pod)',
    );
    expect(r.stdout).toContain(
      'PREROUTING rule 1 (proxy-init/install-proxy-init-prerouting) jumps to PROXY_INIT_REDIRECT',
    );
    expect(r.stdout).toMatch(
      /Port 8080 is not in 4190,4191,[\d,]*: PROXY_INIT_REDIRECT rule 1 \(proxy-init\/ignore-port-[\d,]+\) does not match\./,
    );
    expect(r.stdout).toContain(
      'PROXY_INIT_REDIRECT rule 2 (proxy-init/redirect-all-incoming-to-proxy-port) matches and redirects to port 4143.',
    );
    expect(r.stdout).toContain(`identity (default.${ns}.serviceaccount.identity.minimesh.cluster.local)`);
  });

  it('inbound to 4191 goes to the admin server without the proxy', async () => {
    const r = await run(['explain', `${ns}/web`, '--port', '4191', '--kubeconfig', cluster.kubeconfigPath, '--json']);
    expect(r.code).toBe(0);
    const e = JSON.parse(r.stdout) as { outcome: string; steps: { comment?: string; result: string }[] };
    expect(e.outcome).toBe('not-redirected');
    expect(e.steps.filter((s) => s.result === 'yes').map((s) => s.comment)).toEqual([
      'proxy-init/install-proxy-init-prerouting',
      expect.stringMatching(/^proxy-init\/ignore-port-4190,4191/),
    ]);
  });

  it('outbound from the app (uid 1000) to 8080 is redirected to 4140; to the API server port it is not', async () => {
    const r = await run(['explain', `${ns}/web`, '--to', '10.247.0.1:8080', '--kubeconfig', cluster.kubeconfigPath]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("redirected to the proxy's outbound listener 127.0.0.1:4140");
    expect(r.stdout).toContain(
      "uid 1000 is not the proxy's uid 2102: PROXY_INIT_OUTPUT rule 1 (proxy-init/ignore-proxy-user-id) does not match.",
    );
    const api = await run(['explain', `${ns}/web`, '--to', '10.247.0.1:443', '--kubeconfig', cluster.kubeconfigPath]);
    expect(api.stdout).toContain('not redirected: goes straight to 10.247.0.1:443');
  });

  it('a Service name is resolved to its ClusterIP, which becomes the original destination', async () => {
    const svc = (await adminClient().get(`/api/v1/namespaces/${ns}/services/web`)) as KubeObject;
    const ip = String(svc.spec.clusterIP);
    const r = await run([
      'explain',
      `${ns}/web`,
      '--to',
      `web.${ns}.svc.cluster.local:80`,
      '--kubeconfig',
      cluster.kubeconfigPath,
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`original destination ${ip}:80 with SO_ORIGINAL_DST`);
    expect(r.stdout).toContain(`- web.${ns}.svc.cluster.local is Service ${ns}/web, ClusterIP ${ip}`);
  });

  it('names a missing pod with exit 1', async () => {
    const r = await run(['explain', `${ns}/nope`, '--port', '80', '--kubeconfig', cluster.kubeconfigPath]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`pod ${ns}/nope not found`);
  });
});

describe('minimesh check without the chart', () => {
  it('reaches the API, finds the namespace, fails on the missing control plane and exits 1', async () => {
    const r = await run(['check', '--namespace', ns, '--kubeconfig', cluster.kubeconfigPath]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('✔ can query the Kubernetes API');
    expect(r.stdout).toContain(`✔ control-plane namespace ${ns} exists`);
    expect(r.stdout).toContain('✖ destination: Deployment minimesh-destination exists and is available');
    expect(r.stdout).toContain(`✖ MutatingWebhookConfiguration minimesh-injector-webhook-config-${ns} exists`);
    expect(r.stdout).toContain('✖ trust anchors are readable');
    expect(r.stdout).toMatch(/Status check results are ✖/);
  });
  it('an unreachable API server fails the first check', async () => {
    const r = await run(['check', '--kubeconfig', '/nonexistent/kubeconfig']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('✖ can query the Kubernetes API');
  });
});
