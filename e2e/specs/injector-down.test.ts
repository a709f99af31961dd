// Issue 17: what happens to pod creation when the injector is down, for both failurePolicy values,
// on the real API server. A MutatingWebhookConfiguration like the chart's (pods CREATE, sideEffects
// None, timeoutSeconds 10) points at a Service with no endpoints, scoped by namespaceSelector to a
// namespace of this test; pods are created with a server-side dry run (webhooks are called for those).
//   Ignore (the chart's default): the pod is admitted, unmeshed.
//   Fail (values-ha.yaml): the pod is refused, naming the webhook.
import { randomBytes } from 'node:crypto';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
const ns = `mm-inj-down-${suffix}`;
const configs: string[] = [];

const pod = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, annotations: { 'minimesh.io/inject': 'enabled' } },
  spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
});

function webhookConfig(policy: 'Ignore' | 'Fail') {
  const name = `mm-inj-down-${policy.toLowerCase()}-${suffix}`;
  configs.push(name);
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: 'minimesh-injector.minimesh.io',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        timeoutSeconds: 10,
        failurePolicy: policy,
        clientConfig: { service: { name: 'minimesh-injector', namespace: ns, path: '/', port: 443 } },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      },
    ],
  };
}

async function apply(obj: unknown, extra: string[] = []) {
  return driver.kubectl(['apply', ...extra, '-f', '-'], stringify(obj));
}

beforeAll(async () => {
  await driver.setup();
  expect((await driver.kubectl(['create', 'namespace', ns])).code).toBe(0);
  // The injector's Service, with no pod behind it: the injector is down.
  const svc = await apply({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'minimesh-injector', namespace: ns },
    spec: { selector: { app: 'nothing-here' }, ports: [{ port: 443, targetPort: 8443 }] },
  });
  expect(svc.code, svc.stderr).toBe(0);
}, 300_000);

afterAll(async () => {
  for (const c of configs) await driver.kubectl(['delete', 'mutatingwebhookconfiguration', c, '--ignore-not-found']);
  await driver.kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
});

describe('injector down', () => {
  it('failurePolicy Ignore: the pod is admitted, unmeshed, and the API server notes it failed open', async () => {
    expect((await apply(webhookConfig('Ignore'))).code).toBe(0);
    // Until the API server has loaded the configuration a pod is admitted without calling it; the
    // audit annotation failed-open.mutation.webhook.admission.k8s.io/* shows the webhook was tried.
    let failedOpen: string | undefined;
    for (let i = 0; i < 20 && failedOpen === undefined; i++) {
      const name = `ignored-${i}`;
      const t0 = Date.now();
      const r = await apply(pod(name), ['--dry-run=server', '-o', 'json']);
      const ms = Date.now() - t0;
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { spec: { containers: { name: string }[]; initContainers?: unknown[] } };
      expect(out.spec.containers.map((c) => c.name)).toEqual(['app']);
      expect(out.spec.initContainers ?? []).toEqual([]);
      await new Promise((res) => setTimeout(res, 500));
      const ev = (await driver.auditEvents()).find(
        (e) =>
          e.objectRef?.namespace === ns &&
          e.objectRef.resource === 'pods' &&
          e.verb === 'create' &&
          e.stage === 'ResponseComplete' &&
          (e.requestObject?.metadata?.name === name || e.responseObject?.metadata?.name === name) &&
          Object.keys(e.annotations ?? {}).some((k) => k.startsWith('failed-open.mutation.webhook.admission.k8s.io')),
      );
      if (ev) failedOpen = `${name} admitted in ${ms} ms, failed open`;
    }
    console.log(`Ignore: ${failedOpen}`);
    expect(failedOpen).toBeDefined();
    await driver.kubectl(['delete', 'mutatingwebhookconfiguration', configs.at(-1) as string]);
  }, 120_000);

  it('failurePolicy Fail: the pod is refused, naming the webhook', async () => {
    expect((await apply(webhookConfig('Fail'))).code).toBe(0);
    // The API server picks up a new webhook configuration within a second or so.
    let r = await apply(pod('refused'), ['--dry-run=server']);
    for (let i = 0; i < 20 && r.code === 0; i++) {
      await new Promise((res) => setTimeout(res, 500));
      r = await apply(pod(`refused-${i}`), ['--dry-run=server']);
    }
    console.log(`Fail: ${r.stderr.trim().split('\n')[0]}`);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/failed calling webhook "minimesh-injector\.minimesh\.io"/);
  }, 60_000);
});
