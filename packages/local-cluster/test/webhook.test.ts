// Done-when 5: a MutatingWebhookConfiguration whose clientConfig.url is a test HTTPS server on the
// host (https://127.0.0.1:<port>, certificate with IP SAN 127.0.0.1, caBundle set) is called by the
// API server on pod CREATE, and its patch lands in the stored pod and in the audit log.
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { makeTestCa, makeTestCert, type TestCa } from '@minimesh/test-support/tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminClient,
  createNamespace,
  ensureCluster,
  exposeHostPort,
  readAuditEvents,
  type Exposure,
  type KubeObject,
} from '../src/index.js';
import { eventually, fixture, uniqueName } from './helpers.js';

const ns = uniqueName('lc-webhook');
const webhookName = `${ns}.minimesh.io`;
let server: Server;
let exposure: Exposure | undefined;
let dir: string;
let authority: TestCa;
let caPem: string;
const reviews: KubeObject[] = [];

beforeAll(async () => {
  await ensureCluster();
  await createNamespace(ns);
  authority = makeTestCa({ cn: 'webhook-test-ca', days: 1 });
  dir = authority.dir;
  const tls = makeTestCert({ cn: 'webhook', ca: authority, days: 1 });
  caPem = tls.ca;
  server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const review = JSON.parse(body) as KubeObject;
      reviews.push(review);
      const patch = [{ op: 'add', path: '/metadata/annotations', value: { 'webhook.minimesh.io/seen': 'yes' } }];
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: {
            uid: review.request.uid,
            allowed: true,
            patchType: 'JSONPatch',
            patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
          },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  exposure = await exposeHostPort(port);
  await adminClient().request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: webhookName },
    webhooks: [
      {
        name: webhookName,
        clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: Buffer.from(caPem).toString('base64') },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        failurePolicy: 'Fail',
        timeoutSeconds: 5,
      },
    ],
  });
});

afterAll(async () => {
  await adminClient()
    .request('DELETE', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${webhookName}`)
    .catch(() => undefined);
  await adminClient()
    .request('DELETE', `/api/v1/namespaces/${ns}`)
    .catch(() => undefined);
  await exposure?.close();
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('admission webhook by service reference', () => {
  it('reaches a webhook pod through its Service (aggregator routing to the EndpointSlice address)', async () => {
    const admin = adminClient();
    const svcNs = `${ns}-svc`;
    await createNamespace(svcNs);
    try {
      const svc = makeTestCert({ cn: 'webhook', ca: authority, name: 'svc', san: `DNS:webhook.${svcNs}.svc`, days: 1 });
      await admin.request('POST', `/api/v1/namespaces/${svcNs}/secrets`, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'webhook-tls' },
        type: 'kubernetes.io/tls',
        data: {
          'tls.crt': Buffer.from(svc.cert).toString('base64'),
          'tls.key': Buffer.from(svc.key).toString('base64'),
        },
      });
      await admin.request('POST', `/api/v1/namespaces/${svcNs}/pods`, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'webhook', labels: { app: 'webhook' } },
        spec: {
          volumes: [{ name: 'tls', secret: { secretName: 'webhook-tls' } }],
          containers: [
            {
              name: 'webhook',
              image: fixture('admission-annotate'),
              env: [
                { name: 'TLS_CERT_FILE', value: '/etc/webhook/tls.crt' },
                { name: 'TLS_KEY_FILE', value: '/etc/webhook/tls.key' },
                { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              ],
              ports: [{ name: 'https', containerPort: 8443 }],
              volumeMounts: [{ name: 'tls', mountPath: '/etc/webhook', readOnly: true }],
              readinessProbe: { httpGet: { path: '/healthz', port: 'https', scheme: 'HTTPS' }, periodSeconds: 2 },
            },
          ],
        },
      });
      await admin.request('POST', `/api/v1/namespaces/${svcNs}/services`, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'webhook' },
        spec: { selector: { app: 'webhook' }, ports: [{ name: 'https', port: 443, targetPort: 'https' }] },
      });
      await eventually('webhook endpoint ready', async () => {
        const list = await admin.request(
          'GET',
          `/apis/discovery.k8s.io/v1/namespaces/${svcNs}/endpointslices?labelSelector=kubernetes.io/service-name=webhook`,
        );
        return list.items.some((s: KubeObject) => s.endpoints?.some((e: KubeObject) => e.conditions.ready));
      });
      await admin.request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: `svc.${webhookName}` },
        webhooks: [
          {
            name: `svc.${webhookName}`,
            clientConfig: {
              service: { namespace: svcNs, name: 'webhook', path: '/mutate', port: 443 },
              caBundle: Buffer.from(caPem).toString('base64'),
            },
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': svcNs } },
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            failurePolicy: 'Fail',
            timeoutSeconds: 5,
          },
        ],
      });
      const cm = await eventually(
        'a ConfigMap admitted through the Service',
        async () => {
          const c = await admin.request('POST', `/api/v1/namespaces/${svcNs}/configmaps`, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { generateName: 'probe-' },
          });
          return c.metadata.annotations?.['fixtures.minimesh.io/admitted-by'] ? c : undefined;
        },
        20_000,
      );
      expect(cm.metadata.annotations['fixtures.minimesh.io/admitted-by']).toBe('webhook');
    } finally {
      await admin
        .request('DELETE', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/svc.${webhookName}`)
        .catch(() => undefined);
      await admin.request('DELETE', `/api/v1/namespaces/${svcNs}`).catch(() => undefined);
    }
  });
});

describe('admission webhook by url', () => {
  it('is called on pod CREATE and its patch lands in the stored pod and the audit log', async () => {
    // The API server learns about new webhook configurations through an informer: retry with fresh pods.
    const stored = await eventually(
      'a pod mutated by the webhook',
      async () => {
        const name = `p-${Date.now()}`;
        const pod = await adminClient().request('POST', `/api/v1/namespaces/${ns}/pods`, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name },
          spec: { containers: [{ name: 'app', image: fixture('http-echo') }] },
        });
        return pod.metadata.annotations?.['webhook.minimesh.io/seen'] === 'yes' ? pod : undefined;
      },
      20_000,
    );
    const again = await adminClient().request('GET', `/api/v1/namespaces/${ns}/pods/${stored.metadata.name}`);
    expect(again.metadata.annotations['webhook.minimesh.io/seen']).toBe('yes');
    const call = reviews.find(
      (r) => r.request.name === stored.metadata.name || r.request.object?.metadata?.name === stored.metadata.name,
    );
    expect(call?.request.operation).toBe('CREATE');
    const events = await eventually(
      'the pod create event with the patch annotation',
      () => {
        const evs = readAuditEvents(
          (e) =>
            e.verb === 'create' &&
            e.objectRef?.resource === 'pods' &&
            e.objectRef.namespace === ns &&
            e.objectRef.name === stored.metadata.name &&
            e.stage === 'ResponseComplete',
        );
        return evs.length ? evs : undefined;
      },
      10_000,
    );
    const annotations = events[0]!.annotations ?? {};
    const patchKey = Object.keys(annotations).find((k) => k.startsWith('patch.webhook.admission.k8s.io/'));
    expect(patchKey).toBeDefined();
    expect(annotations[patchKey!]).toContain('webhook.minimesh.io/seen');
  });
});
