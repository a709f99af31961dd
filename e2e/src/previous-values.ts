// The values an earlier release of charts/minimesh holds, as `helm upgrade --reuse-values` hands them to
// the new chart. Helm's upgrade (pkg/action/upgrade.go, reuseValues) rebuilds the old release's values by
// coalescing the OLD chart's defaults with what the user set (util.CoalesceValues(current.Chart,
// current.Config)) and puts them in place of the NEW chart's defaults: a template that reads a value the
// old chart did not have gets nothing. e2e/scripts/previous-values.ts writes them to
// e2e/chart/previous-values/<commit>.yaml; e2e/chart/upgrade-values.test.ts renders the chart with them.
//
// The old chart comes from git (`git archive <commit> charts/minimesh`); its templates are swapped for one
// that prints `.Values`, and helm renders it with the flags the e2e faults install gives (the Linkerd tutorial's
// command, the webhook scope, the local driver's pull policy, 60 s leaves; mesh.ts installChart), so the
// coalescing is Helm's own. Certificates are placeholders that the test replaces with fresh ones.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tutorialInstallArgs } from './chart.js';
import { E2E_SCOPE_LABEL } from './mesh.js';
import { ensureHelm, repoRoot, runOk } from './tools.js';

/** Where the committed fixtures live. */
export const PREVIOUS_VALUES_DIR = join(repoRoot, 'e2e', 'chart', 'previous-values');

/** The certificate values of a fixture, as placeholders the test fills in. */
export const CERT_PLACEHOLDERS = {
  caCrt: '<ca.crt>',
  issuerCrt: '<issuer.crt>',
  issuerKey: '<issuer.key>',
} as const;

/** The control-plane namespace the fixtures were made for (the test renders into it). */
export const FIXTURE_NAMESPACE = 'minimesh-faults-000000';

/** The flags of the e2e faults install on the local driver, certificates as placeholder files. */
function e2eInstallArgs(dir: string): string[] {
  const files = { caCrt: join(dir, 'ca.crt'), issuerCrt: join(dir, 'issuer.crt'), issuerKey: join(dir, 'issuer.key') };
  for (const [k, f] of Object.entries(files)) writeFileSync(f, CERT_PLACEHOLDERS[k as keyof typeof files]);
  return [
    ...tutorialInstallArgs({ dir, caKey: join(dir, 'ca.key'), ...files }),
    '--set',
    `proxyInjector.namespaceSelector.matchLabels.${E2E_SCOPE_LABEL}=${FIXTURE_NAMESPACE}`,
    // The local driver's chartArgs (e2e/drivers/local.ts).
    '--set',
    'controllerImage.pullPolicy=Never',
    '--set',
    'proxy.image.pullPolicy=Never',
    '--set',
    'proxyInit.image.pullPolicy=Never',
    // The faults spec's leaves.
    '--set',
    'identity.issuer.issuanceLifetime=60s',
  ];
}

/** The coalesced values of the chart at `commit` with the e2e install's flags (YAML). */
export async function previousValues(commit: string): Promise<string> {
  const tmp = mkdtempSync(join(tmpdir(), 'mm-previous-values-'));
  try {
    await runOk('bash', [
      '-c',
      `set -o pipefail; git -C "${repoRoot}" archive ${commit} charts/minimesh | tar -x -C "${tmp}"`,
    ]);
    const chart = join(tmp, 'charts', 'minimesh');
    const templates = join(chart, 'templates');
    for (const f of readdirSync(templates)) rmSync(join(templates, f), { recursive: true });
    rmSync(join(chart, 'crds'), { recursive: true, force: true });
    writeFileSync(join(templates, 'values.yaml'), '{{ .Values | toYaml }}\n');
    const certs = join(tmp, 'certs');
    mkdirSync(certs);
    const out = await runOk(ensureHelm(), [
      'template',
      'minimesh',
      chart,
      '-n',
      FIXTURE_NAMESPACE,
      ...e2eInstallArgs(certs),
    ]);
    return out.replace(/^---\n# Source: .*\n/, '');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
