// The webhook over real HTTPS: real AdmissionReviews in, AdmissionReviews out; the bad inputs; the
// exception path; metrics; certificate reload.
import { rmSync, copyFileSync } from 'node:fs';
import jsonpatch from 'fast-json-patch';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@minimesh/runtime';
import { Writable } from 'node:stream';
import {
  createWebhookMetrics,
  createWebhookServer,
  type PodLike,
  type StringMap,
  type WebhookServer,
} from '../src/index.js';
import { testConfig } from './helpers.js';
import { makeTestCert } from '@minimesh/test-support/tls';
import { post, tempDir } from './tls.js';

const silent = createLogger({
  name: 'test',
  level: 'silent',
  destination: new Writable({ write: (_c, _e, cb) => cb() }),
});

function review(object: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'e911857d-c318-11e8-bbad-025000000001',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      requestResource: { group: '', version: 'v1', resource: 'pods' },
      namespace: 'shop',
      operation: 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
      object,
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
      ...extra,
    },
  };
}

const pod = (annotations: StringMap = {}, spec: Record<string, unknown> = {}): PodLike => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { generateName: 'web-6d4cf56db6-', annotations },
  spec: { containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 8080 }] }], ...spec },
});

interface Response {
  uid: string;
  allowed: boolean;
  patchType?: string;
  patch?: string;
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

describe('webhook over HTTPS', () => {
  const dir = tempDir('mm-inj-webhook-');
  let tls = makeTestCert({ dir, cn: 'injector-1' });
  const registry = new Registry();
  const namespaces: Record<string, StringMap> = { shop: {}, meshed: { 'minimesh.io/inject': 'enabled' } };
  let failLookup = false;
  let server: WebhookServer;
  let port = 0;

  beforeAll(async () => {
    server = await createWebhookServer({
      certFile: tls.certFile,
      keyFile: tls.keyFile,
      tlsReloadIntervalMs: 100,
      config: () => testConfig(),
      namespaceAnnotations: (ns) => {
        if (failLookup) throw new Error('namespace cache exploded');
        return namespaces[ns];
      },
      logger: silent,
      metrics: createWebhookMetrics(registry),
    });
    port = await server.listen('127.0.0.1', 0);
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = async (body: unknown): Promise<{ status: number; response: Response; raw: unknown }> => {
    const res = await post(port, JSON.stringify(body), tls.cert);
    return { status: res.status, response: (res.json as { response: Response })?.response, raw: res.json };
  };

  it('answers a pod that asks for the mesh with the same uid, allowed, and a JSON patch that applies', async () => {
    const input = pod({ 'minimesh.io/inject': 'enabled' });
    const { status, response, raw } = await send(review(input));
    expect(status).toBe(200);
    expect(raw).toMatchObject({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' });
    expect(response.uid).toBe('e911857d-c318-11e8-bbad-025000000001');
    expect(response.allowed).toBe(true);
    expect(response.patchType).toBe('JSONPatch');
    expect(response.auditAnnotations).toEqual({ injected: 'true' });
    const ops = JSON.parse(Buffer.from(response.patch as string, 'base64').toString('utf8'));
    const out = jsonpatch.applyPatch(structuredClone(input), ops, true, false).newDocument as PodLike;
    expect(out.spec?.initContainers?.map((c) => c.name)).toEqual(['minimesh-init', 'minimesh-proxy']);
    expect(out.spec?.initContainers?.[0]?.args?.join(' ')).toContain(
      '--incoming-proxy-port 4143 --outgoing-proxy-port 4140 --proxy-uid 2102 --inbound-ports-to-ignore 4190,4191,4567,4568 --outbound-ports-to-ignore 443,6443',
    );
    expect(out.metadata?.labels?.['minimesh.io/workload-ns']).toBe('shop');
  });

  it('uses the namespace annotation when the pod says nothing, and any path works', async () => {
    const body = JSON.stringify(review(pod(), { namespace: 'meshed' }));
    const res = await post(port, body, tls.cert, '/mutate/pods');
    const response = (res.json as { response: Response }).response;
    expect(res.status).toBe(200);
    expect(response.patchType).toBe('JSONPatch');
  });

  it.each([
    ['not-enabled', pod()],
    ['injection-disabled', pod({ 'minimesh.io/inject': 'disabled' })],
    ['host-network', pod({ 'minimesh.io/inject': 'enabled' }, { hostNetwork: true })],
  ])('skips with reason %s: allowed, no patch, the reason in auditAnnotations', async (reason, object) => {
    const { status, response } = await send(review(object));
    expect(status).toBe(200);
    expect(response.allowed).toBe(true);
    expect(response.patch).toBeUndefined();
    expect(response.patchType).toBeUndefined();
    expect(response.auditAnnotations).toEqual({ injected: 'false', 'skip-reason': reason });
  });

  it('leaves non-CREATE operations alone', async () => {
    const { response } = await send(review(pod({ 'minimesh.io/inject': 'enabled' }), { operation: 'UPDATE' }));
    expect(response.patch).toBeUndefined();
    expect(response.auditAnnotations?.['skip-reason']).toBe('not-create');
  });

  it('re-admitting an injected pod is a no-op', async () => {
    const input = pod({ 'minimesh.io/inject': 'enabled' });
    const first = await send(review(input));
    const ops = JSON.parse(Buffer.from(first.response.patch as string, 'base64').toString('utf8'));
    const injected = jsonpatch.applyPatch(structuredClone(input), ops, true, false).newDocument;
    const second = await send(review(injected));
    expect(second.response.patch).toBeUndefined();
    expect(second.response.auditAnnotations?.['skip-reason']).toBe('already-injected');
  });

  it('carries a warning per malformed override and still injects', async () => {
    const { response } = await send(
      review(pod({ 'minimesh.io/inject': 'enabled', 'config.minimesh.io/proxy-uid': '-1' })),
    );
    expect(response.patchType).toBe('JSONPatch');
    expect(response.warnings).toHaveLength(1);
    expect(response.warnings?.[0]).toMatch(/^config\.minimesh\.io\/proxy-uid: "-1" is not valid/);
  });

  it.each([
    ['malformed JSON', '{"apiVersion": "admission.k8s.io/v1", "kind": ', /not valid JSON/],
    [
      'no request',
      JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }),
      /"request" is missing/,
    ],
    ['not a review', JSON.stringify({ hello: 'world' }), /expected admission\.k8s\.io\/v1 AdmissionReview/],
    [
      'a Service',
      JSON.stringify(review({ kind: 'Service' }, { kind: { group: '', version: 'v1', kind: 'Service' } })),
      /request\.kind is core\/v1 Service; the injector only handles core\/v1 Pod/,
    ],
    [
      'a Deployment',
      JSON.stringify(review({ kind: 'Deployment' }, { kind: { group: 'apps', version: 'v1', kind: 'Deployment' } })),
      /apps\/v1 Deployment/,
    ],
    ['no object', JSON.stringify(review(null)), /request\.object is missing/],
    ['an empty body', '', /not valid JSON/],
  ])('rejects %s with 400 and a message naming the problem', async (_name, body, message) => {
    const res = await post(port, body, tls.cert);
    expect(res.status).toBe(400);
    expect((res.json as { message: string }).message).toMatch(message);
  });

  it('rejects a body over 10 MB with 413', async () => {
    const big = JSON.stringify(review(pod({ 'minimesh.io/inject': 'enabled', padding: 'x'.repeat(11 * 1024 * 1024) })));
    const res = await post(port, big, tls.cert);
    expect(res.status).toBe(413);
    expect((res.json as { message: string }).message).toMatch(/10 MiB/);
  });

  it('admits the pod without a patch, with a warning, when building the patch throws', async () => {
    failLookup = true;
    try {
      const { status, response } = await send(review(pod(), { namespace: 'meshed' }));
      expect(status).toBe(200);
      expect(response.allowed).toBe(true);
      expect(response.patch).toBeUndefined();
      expect(response.warnings?.[0]).toMatch(/admitted without the mesh.*namespace cache exploded/);
    } finally {
      failLookup = false;
    }
    // A pod shape we do not expect (spec.containers not a list) takes the same path.
    const { response } = await send(
      review({ metadata: { annotations: { 'minimesh.io/inject': 'enabled' } }, spec: { containers: 5 } }),
    );
    expect(response.allowed).toBe(true);
    expect(response.patch).toBeUndefined();
    expect(response.warnings?.[0]).toMatch(/spec\.containers is missing or not a list/);
  });

  it('counts requests by result and reason and observes latency', async () => {
    const text = await registry.metrics();
    expect(text).toMatch(/minimesh_injector_admission_requests_total\{result="injected",reason="none"\} [1-9]/);
    expect(text).toMatch(/minimesh_injector_admission_requests_total\{result="skipped",reason="not-enabled"\} 1/);
    expect(text).toMatch(/minimesh_injector_admission_requests_total\{result="rejected",reason="malformed-json"\} 2/);
    expect(text).toMatch(/minimesh_injector_admission_requests_total\{result="rejected",reason="body-too-large"\} 1/);
    expect(text).toMatch(/minimesh_injector_admission_requests_total\{result="error",reason="exception"\} 2/);
    expect(text).toMatch(/minimesh_injector_admission_duration_seconds_count\{result="injected"\} [1-9]/);
  });

  it('serves a new certificate after its files change, and keeps the old one when the new files are bad', async () => {
    const before = await post(port, JSON.stringify(review(pod())), tls.cert);
    expect(before.peer.subject.CN).toBe('injector-1');
    const next = makeTestCert({ dir, cn: 'injector-2', name: 'next' });
    copyFileSync(next.keyFile, tls.keyFile);
    copyFileSync(next.certFile, tls.certFile);
    let cn = '';
    for (let i = 0; i < 50 && cn !== 'injector-2'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      cn = String((await post(port, JSON.stringify(review(pod())), [tls.cert, next.cert])).peer.subject.CN);
    }
    expect(cn).toBe('injector-2');
    tls = { ...tls, cert: next.cert };
    // A key that does not match the certificate is refused; the server keeps serving injector-2.
    const other = makeTestCert({ dir, cn: 'injector-3', name: 'other' });
    copyFileSync(other.keyFile, tls.keyFile);
    expect(server.reloadTls()).toBe(false);
    const after = await post(port, JSON.stringify(review(pod())), tls.cert);
    expect(after.peer.subject.CN).toBe('injector-2');
  });
});
