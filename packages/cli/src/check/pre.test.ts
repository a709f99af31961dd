import { describe, expect, it } from 'vitest';
import {
  checkKubernetesVersion,
  checkPreInstall,
  INSTALL_ACCESS,
  parseKubernetesVersion,
  type PreCheckInput,
} from './pre.js';
import type { CheckResult } from './types.js';

const line = (r: CheckResult): string => `${r.status} ${r.description}`;

function input(over: Partial<PreCheckInput> = {}): PreCheckInput {
  return {
    namespace: 'minimesh',
    kubernetesVersion: 'v1.33.13',
    namespaceExists: false,
    existingControlPlane: [],
    otherControlPlanes: [],
    access: INSTALL_ACCESS.map((a) => ({ kind: a.kind, allowed: true })),
    netAdmin: { namespace: 'default', allowed: true },
    ...over,
  };
}

describe('check --pre', () => {
  it('a fresh cluster that allows everything passes', () => {
    const r = checkPreInstall(input());
    expect(r.filter((x) => x.status !== 'ok')).toEqual([]);
    expect(r.map(line)).toEqual(
      expect.arrayContaining([
        'ok is running the minimum Kubernetes API version',
        'ok supports native sidecars',
        'ok no minimesh control plane is installed in namespace minimesh',
        'ok can create Namespaces',
        'ok can create CustomResourceDefinitions',
        'ok can create ClusterRoles',
        'ok can create MutatingWebhookConfigurations',
        'ok pods in namespace default may have the NET_ADMIN and NET_RAW capabilities (proxy-init)',
      ]),
    );
  });

  it('fails when a control plane is already installed in the namespace, and warns about others', () => {
    const r = checkPreInstall(
      input({
        namespaceExists: true,
        existingControlPlane: ['minimesh-destination'],
        existingWebhook: 'minimesh-injector-webhook-config-minimesh',
        otherControlPlanes: ['minimesh-e2e-1'],
      }),
    );
    const cp = r.find((x) => x.description === 'no minimesh control plane is installed in namespace minimesh');
    expect(cp?.status).toBe('fail');
    expect(cp?.detail).toBe(
      'found Deployment minimesh/minimesh-destination, MutatingWebhookConfiguration minimesh-injector-webhook-config-minimesh',
    );
    expect(r.find((x) => x.description === 'no other minimesh control plane runs in the cluster')?.status).toBe('warn');
  });

  it('fails for each kind the user may not create, with the API reason', () => {
    const r = checkPreInstall(
      input({
        access: [
          { kind: 'ClusterRoles', allowed: false, reason: 'RBAC: no rule' },
          { kind: 'Namespaces', error: 'HTTP 403: forbidden' },
          { kind: 'Secrets', allowed: true },
        ],
      }),
    );
    expect(r.filter((x) => x.status === 'fail').map((x) => `${x.description}: ${x.detail}`)).toEqual([
      'can create ClusterRoles: not allowed: RBAC: no rule',
      'can create Namespaces: SelfSubjectAccessReview: HTTP 403: forbidden',
    ]);
  });

  it('fails when Pod Security refuses proxy-init, naming the level', () => {
    const r = checkPreInstall(
      input({
        namespaceExists: true,
        netAdmin: {
          namespace: 'minimesh',
          allowed: false,
          psaEnforce: 'baseline',
          message: 'pods "x" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities',
        },
      }),
    );
    const cap = r.find((x) => x.category === 'pre-kubernetes-capability');
    expect(cap?.status).toBe('fail');
    expect(cap?.detail).toContain('violates PodSecurity "baseline:latest"');
    expect(cap?.hint).toContain('pod-security.kubernetes.io/enforce=privileged');
  });

  it('recommends CNI mode where application namespaces enforce Pod Security that refuses proxy-init', () => {
    const quiet = checkPreInstall(input({}));
    expect(quiet.find((x) => x.description === 'meshed pods are admitted where Pod Security is enforced')?.status).toBe(
      'ok',
    );
    const r = checkPreInstall(
      input({
        podSecurityNamespaces: [
          { name: 'shop', level: 'restricted' },
          { name: 'web', level: 'baseline' },
        ],
      }),
    );
    const psa = r.find((x) => x.description === 'meshed pods are admitted where Pod Security is enforced');
    expect(psa?.status).toBe('warn');
    expect(psa?.detail).toBe(
      "shop (restricted), web (baseline) enforce Pod Security that refuses proxy-init's NET_ADMIN init container: pods meshed there would not be admitted",
    );
    expect(psa?.hint).toContain('install in CNI mode, --set cni.enabled=true');
  });

  it.each([
    ['v1.33.13', 'ok', 'ok'],
    ['v1.29.0-gke.1', 'ok', 'ok'],
    ['v1.27.3', 'ok', 'warn'],
    ['v1.21.0', 'fail', undefined],
  ])('Kubernetes %s: minimum %s, native sidecars %s', (v, min, native) => {
    const r = checkKubernetesVersion(v);
    expect(r[0]?.status).toBe(min);
    expect(r[1]?.status).toBe(native);
  });

  it('parses versions', () => {
    expect(parseKubernetesVersion('v1.33.13')).toEqual([1, 33]);
    expect(parseKubernetesVersion('nonsense')).toBeUndefined();
    expect(checkKubernetesVersion('nonsense')[0]?.status).toBe('fail');
  });
});
