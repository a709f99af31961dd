// charts/minimesh-crds (issue 31 item 1): the CRDs apart from the control plane, each kept by Helm
// (helm.sh/resource-policy: keep), and the control plane's check (templates/crds-check.yaml) naming
// exactly those CRDs with the versions the controllers read. Whether the check refuses an install on a
// cluster without them, and whether the CRDs outlive `helm uninstall`, is tested on the real node
// (specs/crds.test.ts); that `helm template` renders the control plane without them (lookup answers
// nothing there, so the check stands aside) every other chart test shows.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { GATEWAY_GROUP, RESOURCE_KINDS } from '@minimesh/policy';
import { parseManifests, type K8sObject } from '../src/chart.js';
import { chartDir, crdsChartDir, ensureHelm, run } from '../src/tools.js';

type Crd = K8sObject & {
  spec: { group: string; names: { plural: string }; versions: Array<{ name: string; served: boolean }> };
};

async function renderCrds(args: readonly string[] = []): Promise<Crd[]> {
  const r = await run(ensureHelm(), ['template', 'minimesh-crds', crdsChartDir, '-n', 'minimesh', ...args]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return parseManifests(r.stdout) as Crd[];
}

/** The CRDs and versions the control-plane chart requires (its minimesh.requiredCRDs helper). */
function requiredByControlPlane(): Record<string, string> {
  const helpers = readFileSync(join(chartDir, 'templates', '_helpers.tpl'), 'utf8');
  const body = /\{\{- define "minimesh\.requiredCRDs" -\}\}\n([\s\S]*?)\{\{- end -\}\}/.exec(helpers)?.[1];
  if (!body) throw new Error('no minimesh.requiredCRDs in charts/minimesh/templates/_helpers.tpl');
  return parse(body) as Record<string, string>;
}

describe('charts/minimesh-crds', () => {
  it('passes helm lint --strict', async () => {
    const r = await run(ensureHelm(), ['lint', crdsChartDir, '--strict']);
    expect(r.stdout + r.stderr).toContain('0 chart(s) failed');
    expect(r.code).toBe(0);
  });

  it('renders every minimesh CRD and nothing else, each kept by Helm and labelled as minimesh', async () => {
    const crds = await renderCrds();
    expect(crds.map((c) => `${c.kind}/${c.metadata.name}`).sort()).toEqual([
      'CustomResourceDefinition/authorizationpolicies.policy.minimesh.io',
      'CustomResourceDefinition/egressnetworks.policy.minimesh.io',
      'CustomResourceDefinition/externalworkloads.workload.minimesh.io',
      'CustomResourceDefinition/httplocalratelimitpolicies.policy.minimesh.io',
      'CustomResourceDefinition/httproutes.policy.minimesh.io',
      'CustomResourceDefinition/meshtlsauthentications.policy.minimesh.io',
      'CustomResourceDefinition/networkauthentications.policy.minimesh.io',
      'CustomResourceDefinition/servers.policy.minimesh.io',
    ]);
    for (const c of crds) {
      expect(c.metadata.annotations, c.metadata.name).toEqual({ 'helm.sh/resource-policy': 'keep' });
      expect(c.metadata.labels).toMatchObject({
        'app.kubernetes.io/part-of': 'minimesh',
        'app.kubernetes.io/instance': 'minimesh-crds',
        'app.kubernetes.io/managed-by': 'Helm',
      });
    }
    const labelled = await renderCrds(['--set', 'commonLabels.team=mesh']);
    for (const c of labelled) expect(c.metadata.labels?.team).toBe('mesh');
  });

  it('the control plane requires exactly these CRDs, each at the version its controllers read, served here', async () => {
    const required = requiredByControlPlane();
    const crds = await renderCrds();
    expect(Object.keys(required).sort()).toEqual(crds.map((c) => c.metadata.name).sort());
    for (const [name, version] of Object.entries(required)) {
      const crd = crds.find((c) => c.metadata.name === name)!;
      expect(
        crd.spec.versions.some((v) => v.name === version && v.served),
        `${name} serves ${version}`,
      ).toBe(true);
    }
    // The policy controller's own kinds (packages/policy), and destination's ExternalWorkload v1beta1. The
    // Gateway API's routes it also reads are optional (minimesh-crds installGatewayAPI, default false, as
    // Linkerd's linkerd-crds): not required, so not here.
    for (const k of Object.values(RESOURCE_KINDS).filter((x) => x.group !== '' && x.group !== GATEWAY_GROUP))
      expect(required[`${k.plural}.${k.group}`], k.kind).toBe(k.version);
    expect(required['externalworkloads.workload.minimesh.io']).toBe('v1beta1');
  });
});
