// CRDs that outlive the control plane (issue 31 item 1), on a cluster: charts/minimesh-crds installs the
// CRDs, each marked helm.sh/resource-policy: keep, and charts/minimesh refuses to install without them.
// A Server and an AuthorizationPolicy admit only the `client` service account to the server's HTTP
// port (`other` gets 403). Then `helm uninstall` of the control plane keeps every CRD and every policy
// object (same uids); a reinstall serves them again, and restarted pods are held to them again; even
// `helm uninstall minimesh-crds` keeps the CRDs, and a reinstall of that chart adopts them; CRDs newer
// than the control plane (a version it does not know) are fine, older ones (the version it reads not
// served) refuse the upgrade with what to do. The upgrade from the chart with the CRDs inside, under
// load, is faults.test.ts f.
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { policyCrds, type CustomResourceDefinition } from '@minimesh/policy';
import { selectDriver } from '../drivers/index.js';
import type { CertFiles } from '../src/certs.js';
import { helmTemplate, certArgs, type K8sObject } from '../src/chart.js';
import {
  applyObjects,
  CRDS_RELEASE,
  createMeshCerts,
  eventually,
  installChart,
  kubectlJson,
  listPods,
  parseClientLines,
  uninstallChart,
  specMeshSetup,
  SERVER_HTTP_PORT,
  type MeshSetup,
  type Pod,
} from '../src/mesh.js';
import { chartDir, crdsChartDir } from '../src/tools.js';
import { CONTROL_PLANE, echoServer, httpClient, meshedNamespace, readyPods } from '../src/apps.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
const m: MeshSetup = specMeshSetup(driver, { cpNs: `minimesh-crds-${suffix}`, appNs: `mm-e2e-crds-${suffix}` });
const ns = m.appNs;
const G = 'policy.minimesh.io';
const CRDS = [
  'servers.policy.minimesh.io',
  'authorizationpolicies.policy.minimesh.io',
  'meshtlsauthentications.policy.minimesh.io',
  'networkauthentications.policy.minimesh.io',
  'httproutes.policy.minimesh.io',
  'externalworkloads.workload.minimesh.io',
];
let tmp = '';
let certs: CertFiles;

async function kubectlOk(args: readonly string[], input?: string): Promise<string> {
  const r = await driver.kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

async function controlPlaneReady(): Promise<void> {
  for (const c of CONTROL_PLANE) await readyPods(m, c, { controlPlane: true, timeoutMs: 240_000 });
}

function appObjects(): K8sObject[] {
  const url = `http://server.${ns}.svc.cluster.local:${SERVER_HTTP_PORT}/`;
  return [
    meshedNamespace(m),
    ...echoServer(m, { graceSeconds: 2 }),
    ...httpClient(m, 'client', url, { graceSeconds: 2 }),
    ...httpClient(m, 'other', url, { graceSeconds: 2 }),
  ];
}

/** The user's policy: only the `client` service account may call the server's HTTP port. */
function policyObjects(): K8sObject[] {
  return [
    {
      apiVersion: `${G}/v1beta3`,
      kind: 'Server',
      metadata: { name: 'server-http', namespace: ns },
      spec: { podSelector: { matchLabels: { app: 'server' } }, port: 'http', proxyProtocol: 'HTTP/1' },
    },
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'MeshTLSAuthentication',
      metadata: { name: 'client-only', namespace: ns },
      spec: { identityRefs: [{ kind: 'ServiceAccount', name: 'client' }] },
    },
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'AuthorizationPolicy',
      metadata: { name: 'client-only', namespace: ns },
      spec: {
        targetRef: { group: G, kind: 'Server', name: 'server-http' },
        requiredAuthenticationRefs: [{ group: G, kind: 'MeshTLSAuthentication', name: 'client-only' }],
      },
    },
  ];
}

/** "<kind>/<name> <uid>" of the CRDs and the policy objects: a deleted and re-made one changes. */
async function uids(): Promise<string[]> {
  const jp = 'jsonpath={range .items[*]}{.kind}/{.metadata.name} {.metadata.uid}{"\\n"}{end}';
  const crds = await kubectlOk(['get', 'crd', ...CRDS, '-o', jp]);
  const objs = await kubectlOk(['get', CRDS.slice(0, 3).join(','), '-n', ns, '-o', jp]);
  return `${crds}${objs}`.split('\n').filter(Boolean).sort();
}

let copies = 0;
/**
 * A copy of charts/minimesh-crds whose Server CRD `edit` changes (another release of that chart): applied
 * by `helm upgrade minimesh-crds`, as a user would, so Helm stays the CRDs' only field manager.
 */
function crdsChartWith(
  edit: (versions: Array<Record<string, unknown> & { name: string; served: boolean; storage: boolean }>) => void,
): string {
  const dir = join(tmp, `minimesh-crds-${++copies}`);
  cpSync(crdsChartDir, dir, { recursive: true });
  const docs = policyCrds().map((c) => {
    const crd = structuredClone(c) as CustomResourceDefinition & {
      spec: { versions: Array<Record<string, unknown> & { name: string; served: boolean; storage: boolean }> };
    };
    if (crd.metadata.name === 'servers.policy.minimesh.io') edit(crd.spec.versions);
    const metadata = {
      ...crd.metadata,
      labels: { 'app.kubernetes.io/part-of': 'minimesh', 'app.kubernetes.io/component': 'policy' },
      annotations: { 'helm.sh/resource-policy': 'keep' },
    };
    return `---\n${stringify({ ...crd, metadata }, { lineWidth: 0 })}`;
  });
  writeFileSync(join(dir, 'templates', 'policy-crds.yaml'), docs.join(''));
  return dir;
}

/** The newest pod of an app (after a restart: the new one), ready. */
async function newestPod(app: string): Promise<Pod> {
  return eventually(`${ns}/${app} ready`, 180_000, async () => {
    const pods = (await listPods(driver, ns, `app=${app}`)).filter(
      (p) => !(p.metadata as { deletionTimestamp?: string }).deletionTimestamp,
    );
    const ready = pods.filter((p) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    return pods.length === 1 && ready.length === 1 ? ready[0] : undefined;
  });
}

/** Waits until the app's current pod has answered `status` three times (and never the other way since). */
async function answers(app: string, status: 200 | 403): Promise<void> {
  const pod = await newestPod(app);
  await eventually(`${app} (${pod.metadata.name}) gets ${status}`, 120_000, async () => {
    const lines = parseClientLines(await driver.logs(ns, pod.metadata.name, 'http')).filter((l) => l.status);
    const first = lines.findIndex((l) => l.status === status);
    if (first < 0 || lines.length - first < 3) return false;
    return lines.slice(first).every((l) => l.status === status);
  });
}

beforeAll(async () => {
  await driver.setup();
  tmp = mkdtempSync(join(tmpdir(), 'mm-e2e-crds-'));
  certs = await createMeshCerts(tmp);
}, 300_000);

afterAll(async () => {
  if (process.env.MINIMESH_E2E_KEEP) return;
  await driver.kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']).catch(() => undefined);
  if (driver.name === 'local') await uninstallChart(m).catch(() => undefined);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}, 180_000);

describe(`CRDs that outlive the control plane on the ${driver.name} cluster`, () => {
  it('without the CRDs, the control plane refuses to install and says what to do; helm template still renders', async () => {
    // An earlier spec left them (with their objects, in namespaces already deleted): start from none.
    await kubectlOk(['delete', 'crd', ...CRDS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    await expect(installChart(m, certs, { crds: false })).rejects.toThrow(
      /the minimesh CRDs are not installed \(missing: .*servers\.policy\.minimesh\.io.*\)[\s\S]*helm upgrade --install minimesh-crds charts\/minimesh-crds -n /,
    );
    const status = await driver.helm(['status', m.release, '-n', m.cpNs]);
    expect(status.code, 'no release was made').not.toBe(0);
    const rendered = await helmTemplate(m.cpNs, certArgs(certs));
    expect(rendered.code).toBe(0);
  }, 300_000);

  it('installs minimesh-crds first, then the control plane; the policy admits client and refuses other', async () => {
    await installChart(m, certs);
    await controlPlaneReady();
    for (const name of CRDS) {
      const crd = await kubectlJson<K8sObject>(driver, ['get', 'crd', name]);
      expect(crd.metadata.annotations?.['helm.sh/resource-policy'], name).toBe('keep');
      expect(crd.metadata.annotations?.['meta.helm.sh/release-name'], name).toBe(CRDS_RELEASE);
    }
    await applyObjects(driver, [...appObjects(), ...policyObjects()]);
    await answers('client', 200);
    await answers('other', 403);
  }, 600_000);

  it('helm uninstall of the control plane keeps every CRD and every policy object', async () => {
    const before = await uids();
    expect(before).toHaveLength(CRDS.length + 3);
    const r = await driver.helm(['uninstall', m.release, '-n', m.cpNs, '--wait', '--timeout', '120s']);
    expect(r.code, r.stderr).toBe(0);
    expect(await uids()).toEqual(before);
  }, 300_000);

  it('a reinstall of the control plane finds them, and restarted pods are held to the policy again', async () => {
    const before = await uids();
    await installChart(m, certs);
    await controlPlaneReady();
    // New proxies, whose policy can only come from the reinstalled control plane.
    await kubectlOk(['rollout', 'restart', 'deploy', '-n', ns]);
    for (const d of ['server', 'client', 'other'])
      await kubectlOk(['rollout', 'status', '-n', ns, `deploy/${d}`, '--timeout=180s']);
    await answers('client', 200);
    await answers('other', 403);
    expect(await uids()).toEqual(before);
  }, 600_000);

  it('helm uninstall minimesh-crds keeps the CRDs too (resource-policy keep), and a reinstall adopts them', async () => {
    const before = await uids();
    const r = await driver.helm(['uninstall', CRDS_RELEASE, '-n', m.cpNs]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/kept due to the resource policy/);
    expect(await uids()).toEqual(before);
    // No --take-ownership: the CRDs still name this release, so Helm adopts them.
    const again = await driver.helm(['install', CRDS_RELEASE, crdsChartDir, '-n', m.cpNs, '--wait']);
    expect(again.code, again.stderr).toBe(0);
    expect(await uids()).toEqual(before);
  }, 300_000);

  it('keeps working with newer CRDs (a version it does not know); refuses older ones with what to do', async () => {
    type Version = Record<string, unknown> & { name: string; served: boolean; storage: boolean };
    type Crd = K8sObject & { spec: { versions: Version[] } };
    const servers = 'servers.policy.minimesh.io';
    const upgradeControlPlane = () =>
      driver.helm([
        'upgrade',
        m.release,
        chartDir,
        '-n',
        m.cpNs,
        '--reset-then-reuse-values',
        '--wait',
        '--timeout',
        '180s',
      ]);
    // Newer: a later minimesh-crds whose Server CRD serves a version after the one the control plane reads.
    const newer = await driver.helm([
      'upgrade',
      CRDS_RELEASE,
      crdsChartWith((v) => v.push({ ...v.find((x) => x.name === 'v1beta3')!, name: 'v1beta4', storage: false })),
      '-n',
      m.cpNs,
      '--wait',
    ]);
    expect(newer.code, newer.stderr).toBe(0);
    const withV4 = await kubectlJson<Crd>(driver, ['get', 'crd', servers]);
    expect(withV4.spec.versions.map((v) => v.name)).toContain('v1beta4');
    const up = await upgradeControlPlane();
    expect(up.code, up.stderr).toBe(0);
    await controlPlaneReady();
    // New proxies everywhere: their policy comes from the control plane that runs on the newer CRDs.
    await kubectlOk(['rollout', 'restart', 'deploy', '-n', ns]);
    for (const d of ['server', 'client', 'other'])
      await kubectlOk(['rollout', 'status', '-n', ns, `deploy/${d}`, '--timeout=180s']);
    await answers('client', 200);
    await answers('other', 403);
    // Older: the version the control plane reads is no longer served.
    const older = await driver.helm([
      'upgrade',
      CRDS_RELEASE,
      crdsChartWith((v) => {
        for (const x of v) if (x.name === 'v1beta3') x.served = false;
      }),
      '-n',
      m.cpNs,
      '--wait',
    ]);
    expect(older.code, older.stderr).toBe(0);
    const refused = await upgradeControlPlane();
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /older than this control plane: servers\.policy\.minimesh\.io \(v1beta3\) not served/,
    );
    expect(refused.stderr).toContain('helm upgrade --install minimesh-crds charts/minimesh-crds');
    // The chart's own CRDs back (v1beta4 was never stored, so it may go).
    const back = await driver.helm(['upgrade', CRDS_RELEASE, crdsChartDir, '-n', m.cpNs, '--wait']);
    expect(back.code, back.stderr).toBe(0);
    const restored = await kubectlJson<Crd>(driver, ['get', 'crd', servers]);
    expect(restored.spec.versions.map((v) => `${v.name}:${String(v.served)}`)).toEqual([
      'v1alpha1:true',
      'v1beta1:true',
      'v1beta2:true',
      'v1beta3:true',
    ]);
  }, 600_000);
});
