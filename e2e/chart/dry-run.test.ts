// Every object the chart renders, sent to the local cluster's real kube-apiserver with a server-side
// dry-run: schema, defaulting and admission run, nothing is stored. An invalid manifest fails here
// even when helm renders it happily.
import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { adminClient, createNamespace, ensureCluster, type ClusterInfo } from '@minimesh/local-cluster';
import { createTestCerts, type CertFiles } from '../src/certs.js';
import { certArgs, helmTemplate, parseManifests, tutorialInstallArgs, type K8sObject } from '../src/chart.js';
import { chartDir, crdsChartDir, ensureHelm, run, type RunResult } from '../src/tools.js';

const ns = `mm-chart-${randomBytes(3).toString('hex')}`;
let cluster: ClusterInfo;
let tmp: string;
let certs: CertFiles;

beforeAll(async () => {
  cluster = await ensureCluster();
  await createNamespace(ns);
  tmp = mkdtempSync(join(tmpdir(), 'mm-dry-run-'));
  certs = await createTestCerts(tmp);
});
afterAll(async () => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  if (cluster)
    await adminClient()
      .request('DELETE', `/api/v1/namespaces/${ns}`)
      .catch(() => undefined);
});

function dryRun(objects: readonly K8sObject[]): Promise<RunResult> {
  const text = objects.map((o) => `---\n${stringify(o)}`).join('');
  return run(
    cluster.kubectlPath,
    [
      '--kubeconfig',
      cluster.kubeconfigPath,
      'apply',
      '--server-side',
      '--force-conflicts',
      '--field-manager=minimesh-chart-test',
      '--dry-run=server',
      '-f',
      '-',
    ],
    { input: text },
  );
}

async function renderFor(args: string[]): Promise<K8sObject[]> {
  const r = await helmTemplate(ns, args, { includeCrds: true });
  expect(r.code, r.stderr).toBe(0);
  return parseManifests(r.stdout);
}

describe('server-side dry-run on the local cluster', () => {
  it.each([
    ['default values', () => certArgs(certs)],
    ['HA values', () => [...certArgs(certs), '-f', join(chartDir, 'values-ha.yaml')]],
    ["the Linkerd tutorial's install command", () => tutorialInstallArgs(certs)],
    ['a classic sidecar (proxy.nativeSidecar=false)', () => [...certArgs(certs), '--set', 'proxy.nativeSidecar=false']],
    [
      'CNI mode (cni.enabled=true: the DaemonSet and its RBAC)',
      () => [...certArgs(certs), '--set', 'cni.enabled=true'],
    ],
  ])('accepts every object rendered with %s', async (_name, args) => {
    const objects = await renderFor(args());
    const r = await dryRun(objects);
    expect(r.stderr).not.toMatch(/error|invalid/i);
    expect(r.code).toBe(0);
    // kubectl prints one line per object: "<kind>/<name> serverside-applied (server dry run)".
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(objects.length);
    for (const line of lines)
      expect(line).toMatch(/(serverside-applied|created|configured|unchanged) \(server dry run\)$/);
  });

  it('rejects a manifest the API server finds invalid (the check can fail)', async () => {
    const objects = await renderFor(certArgs(certs));
    const broken = structuredClone(objects);
    const mwc = broken.find((o) => o.kind === 'MutatingWebhookConfiguration') as unknown as {
      webhooks: { sideEffects: string }[];
    };
    (mwc.webhooks[0] as { sideEffects: string }).sideEffects = 'Sometimes';
    const r = await dryRun(broken);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('sideEffects');
  });
});

describe('helm upgrade on the local cluster', () => {
  it('keeps the generated webhook certificate (lookup), so upgrades do not rotate it', async () => {
    const release = `mm-up-${randomBytes(2).toString('hex')}`;
    const upNs = `${release}-ns`;
    const helm = (args: string[]): Promise<RunResult> =>
      run(ensureHelm(), [...args, '--kubeconfig', cluster.kubeconfigPath]);
    // No pods (controllerReplicas=0) and a webhook that sees no namespace: nothing else on the shared cluster notices.
    const args = [
      'upgrade',
      '--install',
      release,
      chartDir,
      '-n',
      upNs,
      '--create-namespace',
      ...certArgs(certs),
      '--set',
      'controllerReplicas=0',
      '--set',
      `proxyInjector.namespaceSelector.matchLabels.${release}=never`,
    ];
    const read = async (): Promise<{ crt: string; caBundle: string }> => {
      const kubectl = (a: string[]): Promise<RunResult> =>
        run(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfigPath, ...a]);
      const crt = (
        await kubectl(['get', 'secret', '-n', upNs, 'minimesh-injector-k8s-tls', '-o', 'jsonpath={.data.tls\\.crt}'])
      ).stdout;
      const caBundle = (
        await kubectl([
          'get',
          'mutatingwebhookconfiguration',
          `minimesh-injector-webhook-config-${upNs}`,
          '-o',
          'jsonpath={.webhooks[0].clientConfig.caBundle}',
        ])
      ).stdout;
      return { crt, caBundle };
    };
    try {
      // The control plane refuses to install without its CRDs (templates/crds-check.yaml): their chart
      // first, adopting the CRDs another test left on the shared cluster (they stay: resource-policy keep).
      const crds = await helm([
        'upgrade',
        '--install',
        'minimesh-crds',
        crdsChartDir,
        '-n',
        upNs,
        '--create-namespace',
        '--take-ownership',
        '--force-conflicts',
      ]);
      expect(crds.code, crds.stderr).toBe(0);
      const first = await helm(args);
      expect(first.code, first.stderr).toBe(0);
      const before = await read();
      expect(before.crt.length).toBeGreaterThan(100);
      const second = await helm(args);
      expect(second.code, second.stderr).toBe(0);
      const after = await read();
      expect(after).toEqual(before);
      // And the CA bundle verifies the certificate the injector serves.
      const ca = new X509Certificate(Buffer.from(after.caBundle, 'base64'));
      expect(new X509Certificate(Buffer.from(after.crt, 'base64')).verify(ca.publicKey)).toBe(true);
    } finally {
      await helm(['uninstall', release, '-n', upNs]);
      await helm(['uninstall', 'minimesh-crds', '-n', upNs]);
      await run(cluster.kubectlPath, [
        '--kubeconfig',
        cluster.kubeconfigPath,
        'delete',
        'namespace',
        upNs,
        '--wait=false',
      ]);
    }
  }, 120_000);
});
