// Issue 17 item 4: the audit policy keeps Secrets, TokenRequests and TokenReviews at Metadata level.
// Writes a Secret with a marker, asks for a ServiceAccount token and reviews it, then reads what the
// API server wrote to the audit log for those requests: the events are there, the bodies are not.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminClient,
  createNamespace,
  createServiceAccountToken,
  ensureCluster,
  readAuditEvents,
} from '../src/index.js';
import { eventually, uniqueName } from './helpers.js';

const ns = uniqueName('lc-audit');
const marker = `mm-audit-marker-${randomBytes(12).toString('hex')}`;
const OLD_POLICY =
  'the running kube-apiserver logs bodies: was it started with an older k3d/audit-policy.yaml? (npm run cluster -- down)';

beforeAll(async () => {
  await ensureCluster();
  await createNamespace(ns);
});

afterAll(async () => {
  await adminClient()
    .request('DELETE', `/api/v1/namespaces/${ns}`)
    .catch(() => undefined);
});

describe('audit policy', () => {
  it('logs Secrets, TokenRequests and TokenReviews without their bodies', async () => {
    const admin = adminClient();
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'issuer' },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': Buffer.from(marker).toString('base64'), 'tls.key': Buffer.from(marker).toString('base64') },
    };
    await admin.request('POST', `/api/v1/namespaces/${ns}/secrets`, secret);
    await admin.request('GET', `/api/v1/namespaces/${ns}/secrets/issuer`);
    await admin.request('PUT', `/api/v1/namespaces/${ns}/secrets/issuer`, {
      ...secret,
      stringData: { extra: marker },
    });
    const token = await createServiceAccountToken({ namespace: ns, serviceAccount: 'prover' });
    const review = await admin.request('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token },
    });
    expect(review.status.authenticated).toBe(true);
    const signature = token.split('.')[2] ?? '';
    expect(signature.length).toBeGreaterThan(20);

    // The log is written before the response (--audit-log-mode=blocking), but give it a moment.
    const events = await eventually(
      'the audit events of the Secret, the TokenRequest and the TokenReview',
      async () => {
        const evs = readAuditEvents(
          (e) =>
            e.objectRef?.namespace === ns ||
            (e.objectRef?.resource === 'tokenreviews' && e.stage === 'ResponseComplete'),
        );
        const has = (resource: string, verb: string, sub?: string) =>
          evs.some(
            (e) =>
              e.objectRef?.resource === resource &&
              e.objectRef.subresource === sub &&
              e.verb === verb &&
              e.stage === 'ResponseComplete',
          );
        return has('secrets', 'create') &&
          has('secrets', 'get') &&
          has('secrets', 'update') &&
          has('serviceaccounts', 'create', 'token')
          ? evs
          : undefined;
      },
      10_000,
    );
    const mine = events.filter(
      (e) =>
        e.objectRef?.resource === 'secrets' ||
        (e.objectRef?.resource === 'serviceaccounts' && e.objectRef.subresource === 'token'),
    );
    expect(mine.length).toBeGreaterThanOrEqual(4);
    for (const e of mine) {
      expect(e.level, `${e.verb} ${e.requestURI}: ${OLD_POLICY}`).toBe('Metadata');
      expect(e.requestObject).toBeUndefined();
      expect(e.responseObject).toBeUndefined();
    }
    const reviews = events.filter((e) => e.objectRef?.resource === 'tokenreviews');
    expect(reviews.length).toBeGreaterThan(0);
    for (const e of reviews) expect(e.level, OLD_POLICY).toBe('Metadata');

    // Nothing anywhere in the log carries the marker, its base64, or the token.
    const all = readAuditEvents().map((e) => JSON.stringify(e));
    const b64 = Buffer.from(marker).toString('base64');
    for (const [what, needle] of [
      ['the Secret data', marker],
      ['the Secret data (base64)', b64],
      ['the token', token],
      ['the token signature', signature],
    ] as const) {
      expect(all.filter((l) => l.includes(needle)).length, `${what} in the audit log: ${OLD_POLICY}`).toBe(0);
    }
    // The serviceaccounts themselves (not secrets) stay at RequestResponse, as the Linkerd tutorial's audit policy has it.
    const saCreate = readAuditEvents(
      (e) =>
        e.objectRef?.namespace === ns &&
        e.objectRef.resource === 'serviceaccounts' &&
        !e.objectRef.subresource &&
        e.verb === 'create' &&
        e.stage === 'ResponseComplete',
    );
    expect(saCreate[0]?.level).toBe('RequestResponse');
  });
});
