// The k3d path cannot run here (no container registry: the rancher/k3s image cannot be had), so its pieces
// are checked as far as they go: the cluster config is the Linkerd tutorial's and k3d v5.8.3 itself (built from the
// Go module proxy by scripts/go-tool.sh) loads and validates it against its schema; the audit policy it
// mounts exists; scripts/k3d.sh names every missing tool.
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot, run, runOk } from '../src/tools.js';

const tmp = mkdtempSync(join(tmpdir(), 'mm-k3d-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('k3d/cluster.yaml', () => {
  const cfg = parse(readFileSync(join(repoRoot, 'k3d', 'cluster.yaml'), 'utf8')) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

  it("is the Linkerd tutorial's k3d cluster", () => {
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
      rules: { level: string; resources?: { group: string; resources?: string[] }[] }[];
    };
    expect(policy.apiVersion).toBe('audit.k8s.io/v1');
    expect(policy.kind).toBe('Policy');
    const groups = policy.rules
      .filter((r) => r.level === 'RequestResponse')
      .flatMap((r) => (r.resources ?? []).map((x) => x.group));
    for (const g of ['', 'workload.minimesh.io', 'coordination.k8s.io', 'admissionregistration.k8s.io'])
      expect(groups).toContain(g);
    // EndpointSlices are recorded (who, verb, which slice) without their bodies.
    const slices = policy.rules.find((r) => r.resources?.some((x) => x.group === 'discovery.k8s.io'));
    expect(slices?.level).toBe('Metadata');
    expect(policy.rules.at(-1)).toEqual({ level: 'None' });
    // Secrets, TokenRequests and TokenReviews: Metadata only (no issuer key, no token in the log), and
    // matched before the core group's RequestResponse rule (the first matching rule wins).
    const coreRule = policy.rules.findIndex(
      (r) => r.level === 'RequestResponse' && r.resources?.some((x) => x.group === '' && !x.resources),
    );
    for (const [group, resource] of [
      ['', 'secrets'],
      ['', 'serviceaccounts/token'],
      ['authentication.k8s.io', 'tokenreviews'],
    ] as const) {
      const i = policy.rules.findIndex((r) =>
        r.resources?.some((x) => x.group === group && x.resources?.includes(resource)),
      );
      expect(policy.rules[i]?.level, `${group}/${resource}`).toBe('Metadata');
      expect(i, `${group}/${resource} before the core group's rule`).toBeLessThan(coreRule);
    }
  });
});

describe("k3d v5.8.3's own config loader", () => {
  let k3d: string;
  /** The config as scripts/k3d.sh hands it to k3d, with the audit policy's absolute path. */
  const config = (text = readFileSync(join(repoRoot, 'k3d', 'cluster.yaml'), 'utf8')): string => {
    const file = join(tmp, `cluster-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, text.replaceAll('__AUDIT_POLICY_PATH__', join(repoRoot, 'k3d', 'audit-policy.yaml')));
    return file;
  };

  beforeAll(async () => {
    // Built by scripts/setup.sh before the tests; this only looks it up (or builds it, minutes, once).
    k3d = (await runOk('bash', [join(repoRoot, 'scripts', 'go-tool.sh'), 'k3d'], { timeoutMs: 900_000 })).trim();
  }, 900_000);

  it('is k3d v5.8.3', async () => {
    expect(await runOk(k3d, ['version'])).toMatch(/^k3d version v5\.8\.3$/m);
  });

  it('validates k3d/cluster.yaml against its v1alpha5 schema and reads it as the Linkerd tutorial wrote it', async () => {
    // `k3d config migrate` reads the file with k3d's loader (viper), validates it against the JSON schema
    // of its apiVersion, decodes it into k3d's SimpleConfig and writes it back out.
    const out = join(tmp, 'migrated.yaml');
    const r = await run(k3d, ['config', 'migrate', config(), out]);
    expect(r.code, r.stderr).toBe(0);
    const loaded = parse(readFileSync(out, 'utf8')) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(loaded.apiVersion).toBe('k3d.io/v1alpha5');
    expect(loaded.kind).toBe('Simple');
    expect(loaded.metadata.name).toBe('cluster');
    expect(loaded.servers).toBe(1);
    expect(loaded.image).toBe('rancher/k3s:v1.33.0-k3s1');
    expect(loaded.network).toBe('playground');
    expect(loaded.volumes[0].volume).toBe(
      `${join(repoRoot, 'k3d', 'audit-policy.yaml')}:/etc/rancher/k3s/audit-policy.yaml`,
    );
    expect(loaded.options.k3s.extraArgs.map((a: { arg: string }) => a.arg)).toContain(
      '--kube-apiserver-arg=audit-policy-file=/etc/rancher/k3s/audit-policy.yaml',
    );
  });

  it('rejects a config its schema does not allow', async () => {
    const text = readFileSync(join(repoRoot, 'k3d', 'cluster.yaml'), 'utf8');
    const bad = await run(k3d, [
      'config',
      'migrate',
      config(text.replace('servers: 1', 'servers: one')),
      join(tmp, 'x'),
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stdout + bad.stderr).toContain('servers: Invalid type. Expected: number, given: string');
    const unknown = await run(k3d, ['config', 'migrate', config(`${text}\nserverz: 2\n`), join(tmp, 'y')]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stdout + unknown.stderr).toContain('Additional property serverz is not allowed');
  });
});

describe('scripts/k3d.sh', () => {
  it('says which tools are missing', async () => {
    // A PATH with the shell utilities only: no docker, go or node.
    const bin = join(tmp, 'bin');
    await runOk('mkdir', ['-p', bin]);
    for (const tool of ['bash', 'sed', 'dirname', 'grep', 'cat', 'mktemp', 'id', 'basename', 'env']) {
      const where = (await run('sh', ['-c', `command -v ${tool}`])).stdout.trim();
      if (where) symlinkSync(where, join(bin, tool));
    }
    const r = await run(join(bin, 'bash'), [join(repoRoot, 'scripts', 'k3d.sh'), 'up'], {
      env: { PATH: bin, HOME: tmp, MINIMESH_CACHE: join(tmp, 'cache') },
    });
    expect(r.code).toBe(1);
    for (const tool of ['docker', 'go >= 1.24', 'node 20']) expect(r.stderr).toContain(`- ${tool}`);
  });

  it('prints its usage for an unknown command', async () => {
    const r = await run('bash', [join(repoRoot, 'scripts', 'k3d.sh'), 'sideways']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('usage: npm run k3d -- tools|images|up|e2e|collect DIR|down|status');
  });
});
