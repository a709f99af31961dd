import { beforeAll, describe, expect, it } from 'vitest';
import { createMeshCerts } from '../certs.js';
import {
  checkApi,
  checkDeployments,
  checkReadiness,
  checkWebhook,
  type DeploymentLike,
  type WebhookConfigLike,
} from './control-plane.js';
import { exitCodeOf, formatResults } from './types.js';

const dep = (replicas: number, available: number): DeploymentLike => ({
  spec: { replicas },
  status: { availableReplicas: available },
});

describe('checkDeployments', () => {
  it.each([
    ['all available', dep(1, 1), 'ok'],
    ['2 of 3 available', dep(3, 2), 'warn'],
    ['none available', dep(1, 0), 'fail'],
    ['scaled to zero', dep(0, 0), 'fail'],
    ['missing', undefined, 'fail'],
  ])('destination %s → %s', (_n, d, want) => {
    const all = new Map<string, DeploymentLike | undefined>([
      ['minimesh-destination', d],
      ['minimesh-identity', dep(1, 1)],
      ['minimesh-injector', dep(1, 1)],
    ]);
    const r = checkDeployments('minimesh', all);
    expect(r.map((x) => x.status)).toEqual([want, 'ok', 'ok']);
    expect(r[0]?.description).toBe('destination: Deployment minimesh-destination exists and is available');
  });
});

describe('checkWebhook', () => {
  let ca: string;
  beforeAll(async () => {
    ca = Buffer.from((await createMeshCerts()).caCrt).toString('base64');
  });
  const cfg = (caBundle: string | undefined, ns = 'minimesh'): WebhookConfigLike => ({
    metadata: { name: `minimesh-injector-webhook-config-${ns}` },
    webhooks: [
      {
        name: 'minimesh-injector.minimesh.io',
        clientConfig: {
          ...(caBundle !== undefined ? { caBundle } : {}),
          service: { name: 'minimesh-injector', namespace: ns },
        },
      },
    ],
  });
  it('passes with a CA bundle', () => {
    expect(checkWebhook('minimesh', [cfg(ca)]).map((r) => r.status)).toEqual(['ok', 'ok']);
  });
  it.each([
    ['no configuration', () => [], /not found/],
    ['another namespace only', () => [cfg(ca, 'other')], /not found/],
    ['an empty CA bundle', () => [cfg(undefined)], /caBundle is empty/],
    ['a CA bundle without PEM', () => [cfg(Buffer.from('hello').toString('base64'))], /no PEM certificate/],
  ])('fails with %s', (_n, configs, detail) => {
    const r = checkWebhook('minimesh', configs());
    expect(r.some((x) => x.status === 'fail' && detail.test(x.detail ?? ''))).toBe(true);
  });
});

describe('checkReadiness and output', () => {
  it('maps probes to results', () => {
    const r = checkReadiness([
      { component: 'destination', pod: 'd-1', status: 'ready' },
      { component: 'identity', pod: 'i-1', status: 'not-ready', detail: 'HTTP 503' },
      { component: 'injector', pod: 'j-1', status: 'unreachable', detail: 'timeout' },
      { component: 'injector', status: 'unreachable', detail: 'no running pod' },
    ]);
    expect(r.map((x) => x.status)).toEqual(['ok', 'fail', 'warn', 'skip']);
  });
  it('prints ✔/‼/✖ lines under category headers and fails the exit code only on ✖', () => {
    const good = [
      ...checkApi({ server: 'https://127.0.0.1:6443', version: 'v1.33.13' }),
      ...checkReadiness([{ component: 'injector', pod: 'j-1', status: 'unreachable', detail: 'timeout' }]),
    ];
    const text = formatResults(good);
    expect(text).toContain('kubernetes-api\n--------------\n✔ can query the Kubernetes API\n');
    expect(text).toContain('‼ injector admin /ready (j-1)\n    not reachable: timeout\n');
    expect(text).toMatch(/Status check results are ✔ \(1 warning\)\n$/);
    expect(exitCodeOf(good)).toBe(0);
    const bad = checkApi({ server: 'https://127.0.0.1:1', error: 'connect ECONNREFUSED' });
    expect(formatResults(bad)).toContain(
      '✖ can query the Kubernetes API\n    https://127.0.0.1:1: connect ECONNREFUSED\n',
    );
    expect(exitCodeOf(bad)).toBe(1);
  });
});
