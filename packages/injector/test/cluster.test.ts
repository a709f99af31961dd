// The real API server calls the real injector: the built minimesh-injector runs on the host, a
// MutatingWebhookConfiguration points at it (clientConfig.url, reached from the API server's network
// namespace through exposeHostPort), and pods created in an opted-in namespace are stored injected.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { get } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminClient,
  ensureCluster,
  exposeHostPort,
  readAuditEvents,
  type Exposure,
  type KubeObject,
} from '@minimesh/local-cluster';
import { TEST_ANCHORS, here } from './helpers.js';
import { makeTestCert } from '@minimesh/test-support/tls';
import { tempDir } from './tls.js';

const suffix = Math.random().toString(16).slice(2, 8);
const ns = `mm-inj-${suffix}`;
const webhookName = `injector-${suffix}.minimesh.io`;
const dir = tempDir('mm-inj-cluster-');
let injector: ChildProcess | undefined;
let exposure: Exposure | undefined;
let port = 0;
let adminPort = 0;
let injectorLog = '';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  detail: () => string = () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not true after ${timeoutMs} ms${last ? ` (last error: ${String(last)})` : ''}\n${detail()}\ninjector log:\n${injectorLog.slice(-3000)}`,
      );
    await sleep(200);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject).listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

async function createPod(name: string, annotations: Record<string, string> = {}): Promise<KubeObject> {
  return adminClient().request('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, annotations },
    spec: {
      containers: [{ name: 'app', image: 'minimesh.test/http-echo:e2e', ports: [{ containerPort: 8080 }] }],
    },
  });
}

beforeAll(async () => {
  const info = await ensureCluster();
  const tls = makeTestCert({ dir, cn: 'injector' });
  const configFile = join(dir, 'config.yaml');
  writeFileSync(configFile, JSON.stringify({ identityTrustAnchorsPEM: TEST_ANCHORS, proxy: { logLevel: 'debug' } }));
  port = await freePort();
  adminPort = await freePort();
  injector = spawn(
    process.execPath,
    [
      join(here, '..', 'dist', 'main.js'),
      '--addr',
      `127.0.0.1:${port}`,
      '--admin-addr',
      `127.0.0.1:${adminPort}`,
      '--tls-cert',
      tls.certFile,
      '--tls-key',
      tls.keyFile,
      '--config',
      configFile,
      '--kubeconfig',
      info.kubeconfigPath,
      '--log-level',
      'debug',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  injector.stdout?.on('data', (d: Buffer) => (injectorLog += d.toString()));
  injector.stderr?.on('data', (d: Buffer) => (injectorLog += d.toString()));
  await eventually(
    'the injector is ready (the webhook listens)',
    async () => (await httpGet(`http://127.0.0.1:${adminPort}/ready`)).status === 200,
    30_000,
  );
  exposure = await exposeHostPort(port);

  const admin = adminClient();
  await admin.request('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: ns, annotations: { 'minimesh.io/inject': 'enabled' } },
  });
  await eventually(
    'the default service account',
    () => admin.get(`/api/v1/namespaces/${ns}/serviceaccounts/default`),
    30_000,
  );
  await admin.request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: webhookName },
    webhooks: [
      {
        name: webhookName,
        clientConfig: { url: `https://127.0.0.1:${port}/`, caBundle: Buffer.from(tls.cert).toString('base64') },
        rules: [
          { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' },
        ],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
        // Fail, so that a webhook that is not called makes the test fail instead of silently passing pods.
        failurePolicy: 'Fail',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: 10,
      },
    ],
  });
});

afterAll(async () => {
  const admin = adminClient();
  await admin
    .request('DELETE', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${webhookName}`)
    .catch(() => undefined);
  await admin.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
  await exposure?.close();
  if (injector && injector.exitCode === null) {
    injector.kill('SIGTERM');
    await new Promise((r) => injector?.once('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('injector with the real API server', () => {
  it('a pod created in an opted-in namespace is stored with minimesh-init and minimesh-proxy', async () => {
    // The API server learns about new webhook configurations through an informer: retry with fresh pods.
    // Each attempt's outcome is kept, so a timeout says whether pods were refused (and why) or stored
    // without the mesh.
    const attempts: string[] = [];
    const created = await eventually(
      'a pod injected by the webhook',
      async () => {
        const name = `web-${Date.now()}`;
        const started = Date.now();
        try {
          const pod = await createPod(name);
          const injected = Boolean(pod.spec.initContainers?.length);
          attempts.push(
            `${name}: stored ${injected ? 'injected' : 'without init containers'} in ${Date.now() - started} ms`,
          );
          return injected ? pod : undefined;
        } catch (err) {
          attempts.push(`${name}: refused in ${Date.now() - started} ms: ${String(err).slice(0, 300)}`);
          throw err;
        }
      },
      60_000,
      () => `attempts (${attempts.length}):\n${attempts.slice(-6).join('\n')}`,
    );
    const stored = await adminClient().request('GET', `/api/v1/namespaces/${ns}/pods/${created.metadata.name}`);
    const init = stored.spec.initContainers as {
      name: string;
      args?: string[];
      restartPolicy?: string;
      env?: { name: string; value?: string }[];
    }[];
    expect(init.map((c) => c.name)).toEqual(['minimesh-init', 'minimesh-proxy']);
    expect(init[0]?.args?.join(' ')).toBe(
      '--ipv6=false --incoming-proxy-port 4143 --outgoing-proxy-port 4140 --proxy-uid 2102 --inbound-ports-to-ignore 4190,4191,4567,4568 --outbound-ports-to-ignore 443,6443 --iptables-mode nft',
    );
    expect(init[1]?.restartPolicy).toBe('Always');
    expect(init[1]?.env?.find((e) => e.name === 'MINIMESH_PROXY_LOG')?.value).toBe('debug');
    expect(stored.metadata.annotations['minimesh.io/created-by']).toBe('minimesh/injector 0.1.0');
    expect(stored.metadata.labels['minimesh.io/workload-ns']).toBe(ns);
    expect(stored.spec.volumes.map((v: { name: string }) => v.name)).toEqual(
      expect.arrayContaining([
        'minimesh-proxy-init-xtables-lock',
        'minimesh-identity-end-entity',
        'minimesh-identity-token',
      ]),
    );
    // The API server records our auditAnnotations under the webhook's name.
    const events = await eventually(
      'the audit event of the injected pod',
      () => {
        const evs = readAuditEvents(
          (e) =>
            e.verb === 'create' &&
            e.objectRef?.resource === 'pods' &&
            e.objectRef.namespace === ns &&
            e.objectRef.name === created.metadata.name &&
            e.stage === 'ResponseComplete',
        );
        return evs.length ? evs : undefined;
      },
      30_000,
    );
    expect(events[0]?.annotations?.[`${webhookName}/injected`]).toBe('true');
  }, 120_000);

  it('a pod that says disabled is stored as it was sent, and the skip reason is audited', async () => {
    const pod = await createPod(`opted-out-${Date.now()}`, { 'minimesh.io/inject': 'disabled' });
    expect(pod.spec.initContainers).toBeUndefined();
    expect(pod.spec.containers.map((c: { name: string }) => c.name)).toEqual(['app']);
    const events = await eventually(
      'the audit event of the skipped pod',
      () => {
        const evs = readAuditEvents(
          (e) =>
            e.verb === 'create' &&
            e.objectRef?.resource === 'pods' &&
            e.objectRef.namespace === ns &&
            e.objectRef.name === pod.metadata.name &&
            e.stage === 'ResponseComplete',
        );
        return evs.length ? evs : undefined;
      },
      30_000,
    );
    expect(events[0]?.annotations?.[`${webhookName}/skip-reason`]).toBe('injection-disabled');
  });

  it('counts the admissions in /metrics', async () => {
    const { body } = await httpGet(`http://127.0.0.1:${adminPort}/metrics`);
    expect(body).toMatch(/minimesh_injector_admission_requests_total\{result="injected",reason="none"\} [1-9]/);
    expect(body).toMatch(
      /minimesh_injector_admission_requests_total\{result="skipped",reason="injection-disabled"\} [1-9]/,
    );
  });
});
