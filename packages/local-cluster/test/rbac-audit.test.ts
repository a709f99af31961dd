// Done-when 3 and 4: RBAC is enforced for ServiceAccount tokens, and the audit log records a
// ServiceAccount's watch on services with verb watch and the watch=true request URI.
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminClient,
  createKubeClient,
  createNamespace,
  createServiceAccountToken,
  ensureCluster,
  kubeconfigForServiceAccount,
  KubeApiError,
  readAuditEvents,
  type ClusterInfo,
} from '../src/index.js';
import { eventually, uniqueName } from './helpers.js';

const ns = uniqueName('lc-rbac');
let info: ClusterInfo;

beforeAll(async () => {
  info = await ensureCluster();
  await createNamespace(ns);
});

afterAll(async () => {
  await adminClient()
    .request('DELETE', `/api/v1/namespaces/${ns}`)
    .catch(() => undefined);
});

async function status(fn: () => Promise<unknown>): Promise<number> {
  try {
    await fn();
    return 200;
  } catch (err) {
    if (err instanceof KubeApiError) return err.status;
    throw err;
  }
}

describe('RBAC', () => {
  it('refuses list pods to a ServiceAccount without a Role (403), allows it with one', async () => {
    const token = await createServiceAccountToken({ namespace: ns, serviceAccount: 'reader' });
    const sa = createKubeClient({ ca: readFileSync(info.caCertPath), token });
    expect(await status(() => sa.request('GET', `/api/v1/namespaces/${ns}/pods`))).toBe(403);

    const admin = adminClient();
    await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'pod-reader' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
    });
    await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'pod-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
    });
    await eventually(
      'list pods allowed',
      async () => (await status(() => sa.request('GET', `/api/v1/namespaces/${ns}/pods`))) === 200,
      10_000,
    );
    // Still nothing outside the Role.
    expect(await status(() => sa.request('GET', `/api/v1/namespaces/${ns}/secrets`))).toBe(403);
  });

  it('kubeconfigForServiceAccount writes a kubeconfig that authenticates as the ServiceAccount', async () => {
    const path = await kubeconfigForServiceAccount({ namespace: ns, serviceAccount: 'whoami' });
    const kc = JSON.parse(readFileSync(path, 'utf8'));
    const token = kc.users[0].user.token as string;
    const review = await createKubeClient({ ca: readFileSync(info.caCertPath), token }).request(
      'POST',
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'SelfSubjectReview',
      },
    );
    expect(review.status.userInfo.username).toBe(`system:serviceaccount:${ns}:whoami`);
  });

  it('TokenReview validates a token with a custom audience (identity.minimesh.io)', async () => {
    const token = await createServiceAccountToken({
      namespace: ns,
      serviceAccount: 'proxy',
      audiences: ['identity.minimesh.io'],
      expirationSeconds: 600,
    });
    const review = await adminClient().request('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token, audiences: ['identity.minimesh.io'] },
    });
    expect(review.status.authenticated).toBe(true);
    expect(review.status.user.username).toBe(`system:serviceaccount:${ns}:proxy`);
  });
});

describe('audit log', () => {
  it("records a ServiceAccount's watch on services: user, verb watch, watch=true, all stages", async () => {
    const admin = adminClient();
    await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'svc-watcher' },
      rules: [{ apiGroups: [''], resources: ['services'], verbs: ['list', 'watch'] }],
    });
    await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'svc-watcher' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'svc-watcher' },
      subjects: [{ kind: 'ServiceAccount', name: 'watcher', namespace: ns }],
    });
    const token = await createServiceAccountToken({ namespace: ns, serviceAccount: 'watcher' });
    const username = `system:serviceaccount:${ns}:watcher`;
    // A short watch (timeoutSeconds=1) so the stream also completes.
    await eventually(
      'watch allowed',
      () =>
        new Promise<boolean>((resolve) => {
          const req = request(
            {
              host: '127.0.0.1',
              port: Number(new URL(info.server).port),
              path: `/api/v1/namespaces/${ns}/services?watch=true&timeoutSeconds=1`,
              ca: readFileSync(info.caCertPath),
              headers: { authorization: `Bearer ${token}` },
            },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode === 200));
            },
          );
          req.on('error', () => resolve(false));
          req.end();
        }),
      15_000,
    );
    const events = await eventually(
      'audit events of the watch',
      () => {
        const evs = readAuditEvents((e) => e.user.username === username && e.verb === 'watch');
        return evs.some((e) => e.stage === 'ResponseComplete') ? evs : undefined;
      },
      15_000,
    );
    const stages = new Set(events.map((e) => e.stage));
    expect(stages).toEqual(new Set(['RequestReceived', 'ResponseStarted', 'ResponseComplete']));
    for (const e of events) {
      expect(e.requestURI).toContain('watch=true');
      expect(e.objectRef?.resource).toBe('services');
      expect(e.objectRef?.namespace).toBe(ns);
    }
    expect(events.find((e) => e.stage === 'ResponseComplete')?.annotations?.['authorization.k8s.io/decision']).toBe(
      'allow',
    );
  });
});
