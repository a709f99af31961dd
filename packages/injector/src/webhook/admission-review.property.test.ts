// Issue 17: the AdmissionReview parser reads what the API server (or anyone who reaches the webhook's
// port) sends. Property: any JSON value is either accepted — and the response echoes its uid and
// apiVersion — or refused with BadReviewError; nothing else is ever thrown.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadReviewError, parseAdmissionReview, toAdmissionReview } from './admission-review.js';

// Mostly-valid values weigh 4 to 1 against anything, so both outcomes are exercised.
const likely = <T>(good: fc.Arbitrary<T>, other: fc.Arbitrary<unknown>) =>
  fc.oneof({ arbitrary: good, weight: 4 }, { arbitrary: other, weight: 1 });
const reviewish = fc.record(
  {
    apiVersion: likely(fc.constantFrom('admission.k8s.io/v1', 'admission.k8s.io/v1beta1'), fc.jsonValue()),
    kind: likely(fc.constant('AdmissionReview'), fc.jsonValue()),
    request: likely(
      fc.record(
        {
          uid: likely(fc.uuid(), fc.jsonValue()),
          kind: likely(
            fc.constant({ group: '', version: 'v1', kind: 'Pod' }),
            fc.oneof(fc.record({ group: fc.string(), version: fc.string(), kind: fc.string() }), fc.jsonValue()),
          ),
          operation: fc.oneof(fc.constantFrom('CREATE', 'UPDATE'), fc.jsonValue()),
          namespace: fc.oneof(fc.string(), fc.jsonValue()),
          dryRun: fc.jsonValue(),
          object: likely(fc.object(), fc.jsonValue()),
        },
        { requiredKeys: ['uid', 'kind', 'object'] },
      ),
      fc.jsonValue(),
    ),
  },
  { requiredKeys: [] },
);

describe('parseAdmissionReview (property)', () => {
  it('accepts and echoes, or refuses with BadReviewError, for any JSON', () => {
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(likely(reviewish, fc.jsonValue()), (body) => {
        // What the webhook gets is JSON text: the value as JSON.parse would give it back.
        const parsed: unknown = JSON.parse(JSON.stringify(body) ?? 'null');
        let r: ReturnType<typeof parseAdmissionReview>;
        try {
          r = parseAdmissionReview(parsed);
        } catch (err) {
          expect(err).toBeInstanceOf(BadReviewError);
          expect((err as Error).message).toMatch(/^AdmissionReview: /);
          refused += 1;
          return;
        }
        accepted += 1;
        expect(['admission.k8s.io/v1', 'admission.k8s.io/v1beta1']).toContain(r.apiVersion);
        expect(typeof r.request.uid).toBe('string');
        expect(r.request.uid).not.toBe('');
        expect(r.request.kind).toEqual({ group: '', version: 'v1', kind: 'Pod' });
        expect(typeof r.request.object).toBe('object');
        const out = toAdmissionReview(r.apiVersion, r.request.uid, {});
        expect(JSON.parse(JSON.stringify(out))).toEqual({
          apiVersion: r.apiVersion,
          kind: 'AdmissionReview',
          response: { uid: r.request.uid, allowed: true },
        });
      }),
      { numRuns: 2000 },
    );
    // Both branches ran (the property is not vacuous).
    expect(accepted).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });
});
