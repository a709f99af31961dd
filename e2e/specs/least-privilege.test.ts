// Issue 17 item 3, on the real API server: what each minimesh service account may do, as
// `kubectl auth can-i --list --as system:serviceaccount:<ns>:<sa>` reports it in the control-plane
// namespace and in another one, equals what the code uses (nothing more); none may read a Secret;
// and the chart's control-plane pods pass Pod Security Admission `restricted` except proxy-init's
// capabilities and root user (the exception Linkerd makes without its CNI plugin).
// Only the chart's ServiceAccounts and RBAC objects are created; the Deployments are server-side
// dry runs, so nothing runs and no webhook is registered.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import { certArgs, renderObjects, type K8sObject } from '../src/chart.js';
import { createTestCerts } from '../src/certs.js';
import { parseCanIList } from '../src/rbac.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
const ns = `mm-lp-${suffix}`;
const other = `mm-lp-other-${suffix}`;
let objects: K8sObject[] = [];
let tmp = '';

const RBAC_KINDS = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
const rw = (resource: string, verbs: string[]) => verbs.map((v) => `${resource} ${v}`);
const READ = ['get', 'list', 'watch'];
const LEASE = 'leases.coordination.k8s.io';
// What the code uses: identity creates TokenReviews (src/k8s/token-reviewer.ts); the injector watches
// namespaces and lists by name one its cache does not hold yet (src/k8s/namespace-lookup.ts); destination watches services, pods, EndpointSlices and
// ExternalWorkloads, writes EndpointSlices for ExternalWorkloads (leader/external-workload-mirror.ts)
// and holds its Lease; the policy controller (same service account, as in Linkerd) reads pods,
// services, ExternalWorkloads, the policy resources and the Gateway API's routes, patches the routes'
// status (packages/policy/src/status/status-writer.ts) and holds its own Lease.
// Informers only list and watch (packages/kube/src/informer.ts); a single-object GET is granted only
// where code sends one: the mirror's stale slice, the Lease.
const INFORMER = ['list', 'watch'];
/** The Gateway API route kinds the policy controller reads and writes the status of. */
const GATEWAY_ROUTES = ['httproutes', 'grpcroutes', 'tlsroutes', 'tcproutes'];
const NEEDS: Record<string, { everywhere: string[]; ownNamespace: string[] }> = {
  'minimesh-identity': { everywhere: rw('tokenreviews.authentication.k8s.io', ['create']), ownNamespace: [] },
  'minimesh-injector': { everywhere: rw('namespaces', INFORMER), ownNamespace: [] },
  'minimesh-destination': {
    everywhere: [
      ...rw('services', INFORMER),
      ...rw('pods', INFORMER),
      ...rw('endpointslices.discovery.k8s.io', [...READ, 'create', 'update']),
      ...rw('externalworkloads.workload.minimesh.io', INFORMER),
      ...[
        'servers',
        'authorizationpolicies',
        'meshtlsauthentications',
        'networkauthentications',
        'httproutes',
        'httplocalratelimitpolicies',
        'egressnetworks',
      ].flatMap((r) => rw(`${r}.policy.minimesh.io`, INFORMER)),
      ...rw('httproutes.policy.minimesh.io/status', ['patch']),
      ...rw('egressnetworks.policy.minimesh.io/status', ['patch']),
      ...GATEWAY_ROUTES.flatMap((r) => rw(`${r}.gateway.networking.k8s.io`, INFORMER)),
      ...GATEWAY_ROUTES.flatMap((r) => rw(`${r}.gateway.networking.k8s.io/status`, ['patch'])),
    ],
    ownNamespace: [
      ...rw(LEASE, ['create']),
      ...rw(`${LEASE}[minimesh-destination-endpoint-write]`, ['get', 'update']),
      ...rw(`${LEASE}[minimesh-policy-write]`, ['get', 'update']),
    ],
  },
};

async function canI(sa: string, namespace: string): Promise<string[]> {
  const r = await driver.kubectl([
    'auth',
    'can-i',
    '--list',
    '-n',
    namespace,
    '--as',
    `system:serviceaccount:${ns}:${sa}`,
  ]);
  if (r.code !== 0) throw new Error(`kubectl auth can-i --list: ${r.stderr}`);
  return parseCanIList(r.stdout);
}

beforeAll(async () => {
  await driver.setup();
  tmp = mkdtempSync(join(tmpdir(), 'mm-lp-'));
  objects = await renderObjects(ns, [...certArgs(await createTestCerts(tmp)), '--set', 'installNamespace=true']);
  // The control-plane namespace as the chart renders it (with its Pod Security label); the other plainly.
  const nsObject = objects.find((o) => o.kind === 'Namespace');
  if (!nsObject) throw new Error('the chart rendered no Namespace with installNamespace=true');
  const created = await driver.kubectl(['apply', '-f', '-'], stringify(nsObject));
  if (created.code !== 0) throw new Error(`apply namespace ${ns}: ${created.stderr}`);
  const r0 = await driver.kubectl(['create', 'namespace', other]);
  if (r0.code !== 0) throw new Error(`create namespace ${other}: ${r0.stderr}`);
  const rbac = objects.filter((o) => RBAC_KINDS.has(o.kind));
  const r = await driver.kubectl(['apply', '-n', ns, '-f', '-'], rbac.map((o) => `---\n${stringify(o)}`).join(''));
  if (r.code !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
}, 300_000);

afterAll(async () => {
  const cluster = objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding');
  for (const o of cluster)
    await driver.kubectl(['delete', o.kind.toLowerCase(), o.metadata.name, '--ignore-not-found', '--wait=false']);
  for (const n of [ns, other]) await driver.kubectl(['delete', 'namespace', n, '--wait=false', '--ignore-not-found']);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('least privilege on the API server', () => {
  it.each(Object.keys(NEEDS))('%s can do exactly what it uses, here and in another namespace', async (sa) => {
    const need = NEEDS[sa] as (typeof NEEDS)[string];
    const own = await canI(sa, ns);
    const elsewhere = await canI(sa, other);
    console.log(`${sa}: ${own.length} permissions in ${ns}, ${elsewhere.length} in another namespace`);
    expect(own).toEqual([...new Set([...need.everywhere, ...need.ownNamespace])].sort());
    expect(elsewhere).toEqual([...new Set(need.everywhere)].sort());
    for (const p of [...own, ...elsewhere]) expect(p).not.toMatch(/^secrets/);
  });

  it("the namespace's PSA level is privileged, as Linkerd's: the least that admits the control plane's pods", async () => {
    const live = await driver.kubectl(['get', 'namespace', ns, '-o', 'json']);
    expect(live.code, live.stderr).toBe(0);
    const labels = (JSON.parse(live.stdout) as { metadata: { labels: Record<string, string> } }).metadata.labels;
    expect(labels['pod-security.kubernetes.io/enforce']).toBe('privileged');
    const deployments = objects.filter((o) => o.kind === 'Deployment');
    /** Each Deployment's pod, created as a server-side dry run under the namespace's current level. */
    const dryRunPods = async () => {
      const out: { name: string; code: number; stderr: string }[] = [];
      for (const d of deployments) {
        const template = (d as unknown as { spec: { template: { metadata?: object; spec: object } } }).spec.template;
        const pod = {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `${d.metadata.name}-psa` },
          spec: template.spec,
        };
        const r = await driver.kubectl(['apply', '-n', ns, '--dry-run=server', '-f', '-'], stringify(pod));
        out.push({ name: d.metadata.name, code: r.code, stderr: r.stderr });
      }
      return out;
    };
    const setLevel = async (level: string) => {
      const r = await driver.kubectl([
        'label',
        'namespace',
        ns,
        '--overwrite',
        `pod-security.kubernetes.io/enforce=${level}`,
      ]);
      expect(r.code, r.stderr).toBe(0);
    };
    /** Each clause of a PSA refusal, as the containers it names ("pod must ..." names none). */
    const clauses = (stderr: string) =>
      [...stderr.matchAll(/\(([^()]*\bmust\b[^()]*)\)/g)].map((m) =>
        [...(m[1] as string).split(/\bmust\b/)[0]!.matchAll(/"([^"]+)"/g)].map((n) => n[1] as string),
      );
    try {
      for (const level of ['restricted', 'baseline']) {
        await setLevel(level);
        for (const r of await dryRunPods()) {
          // Refused, and only for proxy-init: every other container would pass this level.
          expect(r.code, `${level}: ${r.name} was admitted`).not.toBe(0);
          expect(r.stderr, `${level}: ${r.name}`).toMatch(/violates PodSecurity/);
          const found = clauses(r.stderr);
          expect(found.length, `${level}: ${r.name}: ${r.stderr}`).toBeGreaterThan(0);
          for (const names of found) expect(names, `${level}: ${r.name}: ${r.stderr}`).toEqual(['minimesh-init']);
          if (level === 'baseline') expect(r.stderr).toMatch(/non-default capabilities.*NET_ADMIN.*NET_RAW/);
          console.log(`${r.name} under ${level}: ${r.stderr.replace(/^.*violates /s, '').trim()}`);
        }
      }
      await setLevel('privileged');
      for (const r of await dryRunPods()) expect(r.code, `privileged: ${r.name}: ${r.stderr}`).toBe(0);
    } finally {
      await setLevel('privileged');
    }
  });

  it('control-plane pods pass PSA restricted except proxy-init (NET_ADMIN, NET_RAW, root), as in Linkerd', async () => {
    const deployments = objects.filter((o) => o.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(
      expect.arrayContaining(['minimesh-destination', 'minimesh-identity', 'minimesh-injector']),
    );
    const label = await driver.kubectl([
      'label',
      'namespace',
      ns,
      'pod-security.kubernetes.io/warn=restricted',
      'pod-security.kubernetes.io/warn-version=latest',
    ]);
    expect(label.code, label.stderr).toBe(0);
    for (const d of deployments) {
      const r = await driver.kubectl(['apply', '-n', ns, '--dry-run=server', '-f', '-'], stringify(d));
      expect(r.code, r.stderr).toBe(0);
      const warning = r.stderr.split('\n').find((l) => l.includes('would violate PodSecurity')) ?? '';
      // Each violation names its container in parentheses: only proxy-init's may appear.
      const clauses = [...warning.matchAll(/\(([^()]*)\)/g)].map((m) => m[1] as string);
      const others = clauses.filter((c) => !/container "minimesh-init"/.test(c) && /container/.test(c));
      expect(others, `${d.metadata.name}: ${warning}`).toEqual([]);
      const podLevel = clauses.filter((c) => !/container/.test(c));
      expect(podLevel, `${d.metadata.name}: ${warning}`).toEqual([]);
      if (warning) expect(warning).toMatch(/unrestricted capabilities|runAsNonRoot|runAsUser=0/);
      console.log(`${d.metadata.name}: ${warning ? warning.replace(/^.*?: /, '') : 'passes restricted'}`);
    }
  });
});
