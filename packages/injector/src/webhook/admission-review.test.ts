import { describe, expect, it } from 'vitest';
import { BadReviewError, parseAdmissionReview, toAdmissionReview } from './admission-review.js';

const request = {
  uid: 'u1',
  kind: { group: '', version: 'v1', kind: 'Pod' },
  operation: 'CREATE',
  namespace: 'ns',
  object: { spec: {} },
};

describe('AdmissionReview', () => {
  it('accepts v1 and v1beta1 and echoes the version back', () => {
    expect(
      parseAdmissionReview({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request }).request.namespace,
    ).toBe('ns');
    expect(
      parseAdmissionReview({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', request }).apiVersion,
    ).toBe('admission.k8s.io/v1beta1');
  });

  it.each([
    [[], 'bad-review'],
    [{ apiVersion: 'v1', kind: 'Pod' }, 'bad-review'],
    [{ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }, 'no-request'],
    [{ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { ...request, uid: '' } }, 'bad-review'],
    [
      {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { ...request, kind: { group: 'apps', version: 'v1', kind: 'Deployment' } },
      },
      'not-a-pod',
    ],
    [
      { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { ...request, object: 'pod' } },
      'not-a-pod',
    ],
  ])('rejects %j as %s', (body, reason) => {
    try {
      parseAdmissionReview(body);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(BadReviewError);
      expect((err as BadReviewError).reason).toBe(reason);
    }
  });

  it('encodes the patch in base64 and keeps warnings to one line of at most 256 characters', () => {
    const review = toAdmissionReview('admission.k8s.io/v1', 'u1', {
      patch: [{ op: 'add', path: '/a', value: 1 }],
      warnings: ['a\nb', 'x'.repeat(300)],
    });
    expect(review.response.patchType).toBe('JSONPatch');
    expect(JSON.parse(Buffer.from(review.response.patch as string, 'base64').toString())).toEqual([
      { op: 'add', path: '/a', value: 1 },
    ]);
    expect(review.response.warnings?.[0]).toBe('a b');
    expect(review.response.warnings?.[1]).toHaveLength(256);
    expect(review.response.warnings?.[1]?.endsWith('...')).toBe(true);
    expect(toAdmissionReview('admission.k8s.io/v1', 'u2', { patch: [] }).response).toEqual({
      uid: 'u2',
      allowed: true,
    });
  });
});
