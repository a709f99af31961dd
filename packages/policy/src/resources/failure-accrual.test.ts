// Failure-accrual annotations: parsed as Linkerd's controller parses them (names, defaults), bad values
// reported and replaced by their default, and the whole way to the proxy: index → the proxy API's
// FailureAccrual.ConsecutiveFailures (over the wire) → the proxy's compiled policy.
import { outbound } from '@minimesh/proto';
import { describe, expect, it } from 'vitest';
import { compileOutboundPolicy } from '../client/outbound-policy.js';
import { PolicyIndex } from '../index/policy-index.js';
import { toProtoOutbound } from '../server/outbound-translator.js';
import { TEST_CLUSTER } from '../testing.js';
import { FAILURE_ACCRUAL_DEFAULTS, parseFailureAccrualAnnotations } from './failure-accrual.js';

const L = 'balancer.linkerd.io/failure-accrual';
const DEFAULTS = { kind: 'consecutive', ...FAILURE_ACCRUAL_DEFAULTS };

describe('parseFailureAccrualAnnotations', () => {
  it('no mode: no failure accrual, whatever else is set', () => {
    expect(parseFailureAccrualAnnotations({ [`${L}-consecutive-max-failures`]: '3' })).toEqual({
      accrual: undefined,
      problems: [],
    });
  });

  it("consecutive alone: Linkerd's defaults (7 failures, 1s to 1m, jitter 0.5)", () => {
    expect(parseFailureAccrualAnnotations({ [L]: 'consecutive' })).toEqual({ accrual: DEFAULTS, problems: [] });
  });

  it('every value set, under either prefix (balancer.minimesh.io wins)', () => {
    const r = parseFailureAccrualAnnotations({
      [L]: 'consecutive',
      [`${L}-consecutive-max-failures`]: '3',
      [`${L}-consecutive-min-penalty`]: '250ms',
      [`${L}-consecutive-max-penalty`]: '10s',
      [`${L}-consecutive-jitter-ratio`]: '0.1',
      'balancer.minimesh.io/failure-accrual-consecutive-max-failures': '4',
    });
    expect(r).toEqual({
      accrual: { kind: 'consecutive', maxFailures: 4, minPenaltyMs: 250, maxPenaltyMs: 10_000, jitterRatio: 0.1 },
      problems: [],
    });
  });

  it('an unknown mode: no failure accrual, and why', () => {
    const r = parseFailureAccrualAnnotations({ [L]: 'sometimes' });
    expect(r.accrual).toBeUndefined();
    expect(r.problems).toEqual([`${L}: expected "consecutive", got "sometimes"; no failure accrual`]);
  });

  it.each([
    ['max-failures', '-1', 'maxFailures', 'a whole number of failures'],
    ['max-failures', 'many', 'maxFailures', 'a whole number of failures'],
    ['min-penalty', '-1s', 'minPenaltyMs', 'a positive duration'],
    ['min-penalty', 'soon', 'minPenaltyMs', 'a positive duration'],
    ['max-penalty', '0s', 'maxPenaltyMs', 'a positive duration'],
    ['jitter-ratio', '-0.5', 'jitterRatio', 'a number from 0 to 100'],
    ['jitter-ratio', '101', 'jitterRatio', 'a number from 0 to 100'],
    ['jitter-ratio', 'lots', 'jitterRatio', 'a number from 0 to 100'],
  ] as const)('%s: %s → a warning and the default', (name, value, field, expected) => {
    const key = `${L}-consecutive-${name}`;
    const r = parseFailureAccrualAnnotations({ [L]: 'consecutive', [key]: value });
    expect(r.accrual).toEqual(DEFAULTS);
    expect(r.accrual?.[field]).toBe(FAILURE_ACCRUAL_DEFAULTS[field]);
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]).toContain(key);
    expect(r.problems[0]).toContain(expected);
    expect(r.problems[0]).toContain(JSON.stringify(value));
  });

  it('a min penalty above the max: both defaults, and why', () => {
    const r = parseFailureAccrualAnnotations({
      [L]: 'consecutive',
      [`${L}-consecutive-min-penalty`]: '2m',
      [`${L}-consecutive-max-penalty`]: '1m',
    });
    expect(r.accrual).toEqual(DEFAULTS);
    expect(r.problems[0]).toMatch(/min-penalty \(120000ms\) exceeds -max-penalty \(60000ms\)/);
  });
});

function service(annotations: Record<string, string>, appProtocol?: string): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop', annotations },
    spec: { clusterIP: '10.96.0.10', ports: [{ port: 80, ...(appProtocol ? { appProtocol } : {}) }] },
  };
}

describe('failure accrual from the Service to the proxy', () => {
  const annotations = {
    [L]: 'consecutive',
    [`${L}-consecutive-max-failures`]: '3',
    [`${L}-consecutive-min-penalty`]: '500ms',
    [`${L}-consecutive-max-penalty`]: '5s',
    [`${L}-consecutive-jitter-ratio`]: '0.25',
  };

  it.each([
    ['detect', undefined],
    ['http1', 'http'],
    ['http2', 'kubernetes.io/h2c'],
  ])('%s port: ConsecutiveFailures with the penalty as backoff, as Linkerd sends it', (protocol, appProtocol) => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Service', service(annotations, appProtocol));
    const policy = index.outbound('shop', 'web', 80, 'shop');
    expect(policy?.failureAccrual).toEqual({
      kind: 'consecutive',
      maxFailures: 3,
      minPenaltyMs: 500,
      maxPenaltyMs: 5000,
      jitterRatio: 0.25,
    });
    const p = toProtoOutbound(policy!);
    const wire = outbound.OutboundPolicy.decode(outbound.OutboundPolicy.encode(p).finish());
    const k = wire.protocol?.kind;
    expect(k?.$case).toBe(protocol);
    const fa =
      k?.$case === 'detect'
        ? k.value.http1?.failureAccrual
        : k?.$case === 'http1' || k?.$case === 'http2'
          ? k.value.failureAccrual
          : undefined;
    expect(fa?.kind).toEqual({
      $case: 'consecutiveFailures',
      value: {
        maxFailures: 3,
        backoff: {
          minBackoff: { seconds: 0n, nanos: 500_000_000 },
          maxBackoff: { seconds: 5n, nanos: 0 },
          jitterRatio: 0.25,
          respectRetryAfterHint: false,
        },
      },
    });
    if (k?.$case === 'detect') expect(k.value.http2?.failureAccrual).toEqual(fa);
    expect(compileOutboundPolicy(wire).failureAccrual).toEqual({
      maxFailures: 3,
      minMs: 500,
      maxMs: 5000,
      jitter: 0.25,
    });
  });

  it('no annotation: no FailureAccrual on the wire, none compiled', () => {
    const index = new PolicyIndex(TEST_CLUSTER);
    index.apply('Service', service({}));
    const p = toProtoOutbound(index.outbound('shop', 'web', 80, 'shop')!);
    const k = p.protocol?.kind;
    expect(k?.$case === 'detect' && k.value.http1?.failureAccrual).toBeUndefined();
    expect(compileOutboundPolicy(p).failureAccrual).toBeUndefined();
  });

  it('bad values are reported once to a watching client (a warning), the breaker keeps its defaults', () => {
    const diagnostics: string[] = [];
    const index = new PolicyIndex(TEST_CLUSTER, { onDiagnostic: (m) => diagnostics.push(m) });
    index.apply('Service', service({ [L]: 'consecutive', [`${L}-consecutive-max-penalty`]: '-5s' }));
    const sub = index.watchOutbound('shop', 'web', 80, 'shop', { update: () => {}, end: () => {} });
    expect(sub?.current.failureAccrual).toEqual(DEFAULTS);
    expect(diagnostics).toEqual([
      `Service shop/web: ${L}-consecutive-max-penalty: expected a positive duration such as 500ms, 10s or 1m, got "-5s"; using the default 60000ms`,
    ]);
  });

  it('the proxy refuses what linkerd2-proxy refuses: no backoff, max below min', () => {
    const bad = (fa: outbound.FailureAccrual) =>
      compileOutboundPolicy({ protocol: { kind: { $case: 'http1', value: { routes: [], failureAccrual: fa } } } })
        .invalid;
    expect(bad({ kind: { $case: 'consecutiveFailures', value: { maxFailures: 3 } } })).toMatch(/without a backoff/);
    expect(
      bad({
        kind: {
          $case: 'consecutiveFailures',
          value: {
            maxFailures: 3,
            backoff: {
              minBackoff: { seconds: 2n, nanos: 0 },
              maxBackoff: { seconds: 1n, nanos: 0 },
              jitterRatio: 0,
              respectRetryAfterHint: false,
            },
          },
        },
      }),
    ).toMatch(/backoff 2000-1000 ms is invalid/);
  });
});
