// The k3d path cannot run here (no Docker engine), so its pieces are checked statically: the cluster
// config is the seed's, the audit policy it mounts exists, and scripts/k3d.sh names every missing tool.
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot, run, runOk } from '../src/tools.js';

const tmp = mkdtempSync(join(tmpdir(), 'mm-k3d-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('k3d/cluster.yaml', () => {
  const cfg = parse(readFileSync(join(repoRoot, 'k3d', 'cluster.yaml'), 'utf8')) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

  it("is the seed's cluster", () => {
    expect(cfg.apiVersion).toBe('k3d.io/v1alpha5');
    expect(cfg.kind).toBe('Simple');
    expect(cfg.metadata.name).toBe('cluster');
    expect(cfg.servers).toBe(1);
    expect(cfg.agents).toBe(0);
    expect(cfg.image).toBe('rancher/k3s:v1.33.0-k3s1');
    expect(cfg.network).toBe('playground');
    expect(cfg.ports).toEqual([{ port: '8081:80', nodeFilters: ['loadbalancer'] }]);
    expect(cfg.options.k3s.extraArgs.map((a: { arg: string }) => a.arg)).toEqual([
      '--disable=traefik',
      '--cluster-cidr=10.23.0.0/16',
      '--service-cidr=10.247.0.0/16',
      '--debug',
      '--kube-apiserver-arg=audit-policy-file=/etc/rancher/k3s/audit-policy.yaml',
      '--kube-apiserver-arg=audit-log-path=/var/log/kubernetes/audit/audit.log',
    ]);
    expect(cfg.volumes).toEqual([
      { volume: '__AUDIT_POLICY_PATH__:/etc/rancher/k3s/audit-policy.yaml', nodeFilters: ['server:0'] },
    ]);
  });

  it("mounts an audit policy that exists and records the mesh's requests", () => {
    const policy = parse(readFileSync(join(repoRoot, 'k3d', 'audit-policy.yaml'), 'utf8')) as {
      apiVersion: string;
      kind: string;
      rules: { level: string; resources?: { group: string }[] }[];
    };
    expect(policy.apiVersion).toBe('audit.k8s.io/v1');
    expect(policy.kind).toBe('Policy');
    const groups = policy.rules
      .filter((r) => r.level === 'RequestResponse')
      .flatMap((r) => (r.resources ?? []).map((x) => x.group));
    for (const g of [
      '',
      'workload.minimesh.io',
      'coordination.k8s.io',
      'authentication.k8s.io',
      'discovery.k8s.io',
      'admissionregistration.k8s.io',
    ])
      expect(groups).toContain(g);
    expect(policy.rules.at(-1)).toEqual({ level: 'None' });
  });
});

describe('scripts/k3d.sh', () => {
  it('says which tools are missing', async () => {
    // A PATH with the shell utilities only: no docker, k3d, kubectl, helm (nor npx to fetch helm).
    const bin = join(tmp, 'bin');
    await runOk('mkdir', ['-p', bin]);
    for (const tool of ['bash', 'sed', 'dirname', 'grep', 'cat', 'mktemp', 'id', 'basename', 'env']) {
      const where = (await run('sh', ['-c', `command -v ${tool}`])).stdout.trim();
      if (where) symlinkSync(where, join(bin, tool));
    }
    const r = await run(join(bin, 'bash'), [join(repoRoot, 'scripts', 'k3d.sh'), 'up'], {
      env: { PATH: bin, HOME: tmp, MINIMESH_CACHE_DIR: join(tmp, 'cache') },
    });
    expect(r.code).toBe(1);
    for (const tool of ['docker', 'k3d v5', 'kubectl', 'helm']) expect(r.stderr).toContain(`- ${tool}`);
  });

  it('prints its usage for an unknown command', async () => {
    const r = await run('bash', [join(repoRoot, 'scripts', 'k3d.sh'), 'sideways']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('usage: npm run k3d -- up|e2e|down|status');
  });
});
