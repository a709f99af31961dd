// The built `minimesh` binary, spawned as a user runs it: inject from stdin, uninject round trip,
// override flags, bad input (exit 2), certs create checked with openssl.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const bin = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'main.js');
const work = mkdtempSync(join(tmpdir(), 'mm-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * Runs the binary as a user does. Asynchronous on purpose: a test that runs it dozens of times in a row
 * with spawnSync blocked vitest's worker for over a minute on a loaded machine, and the worker's own RPC
 * to the runner then timed out ("Timeout calling onTaskUpdate"), failing the run.
 */
function run(args: string[], input = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { timeout: 30_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- YAML documents are walked freely in assertions
const docs = (text: string): Record<string, any>[] => parseAllDocuments(text).map((d) => d.toJS());

const MANIFEST = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      initContainers:
        - name: migrate
          image: example/migrate:1
      containers:
        - name: web
          image: nginx:1.27
          ports: [{containerPort: 8080, name: http}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: job, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: node-agent}
spec:
  hostNetwork: true
  containers: [{name: agent, image: example/agent:1}]
`;

const ANCHORS = join(work, 'anchors.pem');
writeFileSync(ANCHORS, '-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n');
const DEPLOYMENT_ONLY = MANIFEST.split('---\n')[0]!;

describe('minimesh inject (default: the annotation, as linkerd inject)', async () => {
  it('adds minimesh.io/inject: enabled and the override flags as annotations, nothing else', async () => {
    const r = await run(['inject', '--proxy-log-level', 'debug', '--skip-outbound-ports', '3306', '-'], MANIFEST);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/deployment "web" annotated \(the webhook injects its pods\)/);
    expect(r.stderr).toMatch(/pod "node-agent" skipped: the pod uses hostNetwork/);
    expect(r.stderr).not.toMatch(/warning/);
    const [deploy, svc, cron, pod] = docs(r.stdout);
    const original = docs(MANIFEST);
    const tmpl = deploy!.spec.template;
    expect(tmpl.metadata.annotations).toEqual({
      'minimesh.io/inject': 'enabled',
      'config.minimesh.io/proxy-log-level': 'debug',
      'config.minimesh.io/skip-outbound-ports': '3306',
    });
    // Only the annotations changed: the containers and labels are the manifest's.
    expect({ ...tmpl, metadata: { ...tmpl.metadata, annotations: undefined } }).toEqual({
      ...original[0]!.spec.template,
      metadata: { ...original[0]!.spec.template.metadata, annotations: undefined },
    });
    expect(cron!.spec.jobTemplate.spec.template.metadata.annotations['minimesh.io/inject']).toBe('enabled');
    expect(cron!.spec.jobTemplate.spec.template.spec).toEqual(original[2]!.spec.jobTemplate.spec.template.spec);
    expect(svc).toEqual(original[1]);
    expect(pod).toEqual(original[3]);
    // uninject takes the annotation off again.
    const file = join(work, 'annotated.yaml');
    writeFileSync(file, (await run(['inject', '-'], MANIFEST)).stdout);
    expect(docs((await run(['uninject', file])).stdout)).toEqual(original);
  });

  it('refuses --trust-anchors and --config without --manual, and --manual without trust anchors (exit 2)', async () => {
    const a = await run(['inject', '--trust-anchors', ANCHORS, '-'], MANIFEST);
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(/^minimesh inject: --trust-anchors only matters with --manual/);
    const m = await run(['inject', '--manual', '-'], MANIFEST);
    expect(m.code).toBe(2);
    expect(m.stderr).toMatch(/^minimesh inject: --manual needs the trust anchors: pass --trust-anchors ca\.crt/);
    expect(m.stdout).toBe('');
  });

  it('refuses the classic sidecar for a Job or CronJob: its proxy would never exit', async () => {
    for (const args of [
      ['inject', '--proxy-enable-native-sidecar', 'false', '-'],
      ['inject', '--manual', '--trust-anchors', ANCHORS, '--proxy-enable-native-sidecar', 'false', '-'],
    ]) {
      const r = await run(args, MANIFEST);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(
        /cronjob "nightly": the classic sidecar .* never exits, so this pod would never complete/,
      );
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    // A Deployment may use it.
    expect((await run(['inject', '--proxy-enable-native-sidecar', 'false', '-'], DEPLOYMENT_ONLY)).code).toBe(0);
  });
});

describe('minimesh inject --manual', async () => {
  it('injects a Deployment read from stdin, leaves other kinds alone, and reports per workload', async () => {
    const r = await run(['inject', '--manual', '--trust-anchors', ANCHORS, '-'], MANIFEST);
    expect(r.stderr).toMatch(/deployment "web" injected/);
    expect(r.code).toBe(0);
    const [deploy, svc, cron, pod] = docs(r.stdout);
    const tmpl = deploy!.spec.template;
    expect(tmpl.metadata.annotations['minimesh.io/inject']).toBe('enabled');
    expect(tmpl.metadata.annotations['minimesh.io/created-by']).toBe('minimesh/injector 0.1.0');
    expect(tmpl.metadata.labels).toEqual({
      app: 'web',
      'minimesh.io/control-plane-ns': 'minimesh',
      'minimesh.io/workload-ns': 'shop',
    });
    expect(tmpl.spec.initContainers.map((c: { name: string }) => c.name)).toEqual([
      'minimesh-init',
      'minimesh-proxy',
      'migrate',
    ]);
    expect(tmpl.spec.initContainers[0].args.join(' ')).toBe(
      '--ipv6=false --incoming-proxy-port 4143 --outgoing-proxy-port 4140 --proxy-uid 2102 --inbound-ports-to-ignore 4190,4191,4567,4568 --outbound-ports-to-ignore 443,6443 --iptables-mode nft',
    );
    expect(tmpl.spec.initContainers[1].restartPolicy).toBe('Always');
    expect(tmpl.spec.volumes.map((v: { name: string }) => v.name)).toEqual([
      'minimesh-proxy-init-xtables-lock',
      'minimesh-identity-end-entity',
      'minimesh-identity-token',
    ]);
    expect(svc).toEqual(docs(MANIFEST)[1]);
    expect(cron!.spec.jobTemplate.spec.template.spec.initContainers[1].name).toBe('minimesh-proxy');
    expect(r.stderr).toMatch(/cronjob "nightly" injected/);
    expect(pod).toEqual(docs(MANIFEST)[3]);
    expect(r.stderr).toMatch(/pod "node-agent" skipped: the pod uses hostNetwork/);
  });

  it('uninject removes exactly what inject added', async () => {
    const injected = await run(['inject', '--manual', '--trust-anchors', ANCHORS], MANIFEST);
    const file = join(work, 'injected.yaml');
    writeFileSync(file, injected.stdout);
    const back = await run(['uninject', file]);
    expect(back.code).toBe(0);
    expect(docs(back.stdout)).toEqual(docs(MANIFEST));
    expect(back.stderr).toMatch(/deployment "web" uninjected/);
  });

  it('applies the override flags and the trust anchors', async () => {
    const r = await run(
      [
        'inject',
        '--manual',
        '--proxy-log-level',
        'debug',
        '--skip-outbound-ports',
        '3306',
        '--proxy-image',
        'registry.local/proxy',
        '--proxy-version',
        'dev',
        '--proxy-enable-native-sidecar',
        'false',
        '--trust-anchors',
        ANCHORS,
        '-',
      ],
      DEPLOYMENT_ONLY,
    );
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/warning/);
    const spec = docs(r.stdout)[0]!.spec.template.spec;
    expect(spec.initContainers.map((c: { name: string }) => c.name)).toEqual(['minimesh-init', 'migrate']);
    const proxy = spec.containers[0];
    expect(proxy.name).toBe('minimesh-proxy');
    expect(proxy.image).toBe('registry.local/proxy:dev');
    expect(proxy.restartPolicy).toBeUndefined();
    expect(proxy.startupProbe).toBeUndefined();
    const env = Object.fromEntries(proxy.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(env.MINIMESH_PROXY_LOG).toBe('debug');
    expect(env.MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS).toContain('MIIBtest');
    expect(spec.initContainers[0].args).toContain('443,3306,6443');
  });

  it.each([
    [['inject', '--proxy-uid', 'root', '-'], /--proxy-uid: "root" is not valid: expected a non-root user id/],
    [['inject', '--skip-outbound-ports', '70000', '-'], /--skip-outbound-ports: "70000" is not valid/],
    [['inject', '--no-such-flag', '-'], /no-such-flag/],
    [['inject', join(work, 'missing.yaml')], /cannot read .*missing\.yaml/],
    [['inject', '--manual', '--trust-anchors', join(work, 'missing.pem'), '-'], /--trust-anchors: cannot read/],
    [['nosuchcommand'], /unknown command "nosuchcommand"/],
  ])('exits 2 with one line for bad input: %j', async (args, message) => {
    const r = await run(args, MANIFEST);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 2 on YAML that does not parse', async () => {
    const r = await run(['inject', '-'], 'kind: Pod\n  metadata: [\n');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/stdin: document 1 is not valid YAML/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('inject --help says what --skip-subnets does (it matches the source of inbound connections)', async () => {
    expect((await run(['inject', '--help'])).stdout).toMatch(
      /--skip-subnets <value>\s+CIDRs whose inbound connections bypass the proxy \(matched on the source address\)/,
    );
  });

  /** The commands a help text lists under Commands: or Subcommands:. */
  function listed(help: string): string[] {
    const m = /^(?:Sub)?[Cc]ommands:\n((?: {2}\S.*\n?)+)/m.exec(help);
    return m
      ? (m[1] as string)
          .trimEnd()
          .split('\n')
          .map((l) => l.trim().split(/\s+/)[0] as string)
      : [];
  }

  /** No section header ("Flags:") without lines under it, no blank-line runs, columns that line up. */
  function expectWellFormed(help: string, what: string): void {
    const lines = help.split('\n');
    lines.forEach((line, i) => {
      if (/^[A-Z][A-Za-z ]*:$/.test(line))
        expect(lines[i + 1] ?? '', `${what}: empty ${line} block`).toMatch(/^ {2}\S/);
      if (line === '') expect(lines[i + 1] ?? 'end', `${what}: two blank lines`).not.toBe('');
    });
    expect(help.endsWith('\n'), `${what}: ends with a newline`).toBe(true);
  }

  it('--help everywhere: every command and subcommand, no empty section (uninject has no flags of its own)', async () => {
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    expectWellFormed(top.stdout, 'minimesh --help');
    const commands = listed(top.stdout);
    expect(commands).toEqual(
      expect.arrayContaining([
        'inject',
        'uninject',
        'explain',
        'check',
        'authz',
        'certs',
        'version',
        'viz',
        'diagnostics',
      ]),
    );
    // The summaries start in one column, however long a command's name.
    const columns = new Set(
      top.stdout
        .split('Commands:\n')[1]!
        .split('\n\n')[0]!
        .split('\n')
        .map((l) => /^ {2}\S+\s+/.exec(l)?.[0].length),
    );
    expect(columns.size, top.stdout).toBe(1);
    const seen: string[] = [];
    for (const c of commands) {
      const r = await run([c, '--help']);
      expect(r.code, `${c} --help`).toBe(0);
      expect(r.stdout).toMatch(/Usage: minimesh/);
      expectWellFormed(r.stdout, `${c} --help`);
      seen.push(c);
      for (const sub of listed(r.stdout)) {
        const s = await run([c, sub, '--help']);
        expect(s.code, `${c} ${sub} --help`).toBe(0);
        expect(s.stdout).toMatch(new RegExp(`^minimesh ${c} ${sub} — .*\n\nUsage: minimesh ${c} ${sub}`));
        expect(s.stdout).toMatch(/\nFlags:\n/);
        expectWellFormed(s.stdout, `${c} ${sub} --help`);
        seen.push(`${c} ${sub}`);
      }
    }
    expect(seen).toEqual(
      expect.arrayContaining(['certs create', 'viz stat', 'viz edges', 'diagnostics proxy-metrics']),
    );
    expect((await run(['uninject', '--help'])).stdout).toMatch(/\nFlags:\n {2}-h, --help +show this help\n$/);
  });
});

describe('minimesh certs create', async () => {
  it("writes a root and an issuer that openssl verifies, with the Linkerd tutorial's profiles", async () => {
    const dir = join(work, 'certs');
    const r = await run(['certs', 'create', '--dir', dir]);
    expect(r.code).toBe(0);
    expect(
      execFileSync('openssl', ['verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'issuer.crt')], {
        encoding: 'utf8',
      }),
    ).toMatch(/issuer\.crt: OK/);
    const root = execFileSync('openssl', ['x509', '-in', join(dir, 'ca.crt'), '-noout', '-text'], { encoding: 'utf8' });
    expect(root).toMatch(/Subject: CN ?= ?root\.minimesh\.cluster\.local/);
    expect(root).toMatch(/CA:TRUE, pathlen:1/);
    expect(root).toMatch(/ASN1 OID: prime256v1/);
    expect(root).toMatch(/ecdsa-with-SHA256/);
    const issuer = execFileSync('openssl', ['x509', '-in', join(dir, 'issuer.crt'), '-noout', '-text'], {
      encoding: 'utf8',
    });
    expect(issuer).toMatch(/Subject: CN ?= ?identity\.minimesh\.cluster\.local/);
    expect(issuer).toMatch(/Issuer: CN ?= ?root\.minimesh\.cluster\.local/);
    expect(issuer).toMatch(/CA:TRUE, pathlen:0/);
    expect(issuer).toMatch(/Certificate Sign, CRL Sign/);
    const endDate = execFileSync('openssl', ['x509', '-in', join(dir, 'issuer.crt'), '-noout', '-enddate'], {
      encoding: 'utf8',
    });
    const days = (Date.parse(endDate.replace('notAfter=', '').trim()) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(364);
    expect(days).toBeLessThan(366);
    // The keys are PKCS#8, private to the owner, and match their certificates.
    expect(readFileSync(join(dir, 'issuer.key'), 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(statSync(join(dir, 'issuer.key')).mode & 0o777).toBe(0o600);
    const pub = (args: string[]): string => execFileSync('openssl', args, { encoding: 'utf8' });
    expect(pub(['pkey', '-in', join(dir, 'issuer.key'), '-pubout'])).toBe(
      pub(['x509', '-in', join(dir, 'issuer.crt'), '-noout', '-pubkey']),
    );
    expect(pub(['pkey', '-in', join(dir, 'ca.key'), '-pubout'])).toBe(
      pub(['x509', '-in', join(dir, 'ca.crt'), '-noout', '-pubkey']),
    );
  });

  it('refuses to overwrite without --force', async () => {
    const dir = join(work, 'certs-twice');
    expect((await run(['certs', 'create', '--dir', dir])).code).toBe(0);
    const before = readFileSync(join(dir, 'ca.crt'), 'utf8');
    const again = await run(['certs', 'create', '--dir', dir]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already exist.*--force/);
    expect(readFileSync(join(dir, 'ca.crt'), 'utf8')).toBe(before);
    expect((await run(['certs', 'create', '--dir', dir, '--force'])).code).toBe(0);
    expect(readFileSync(join(dir, 'ca.crt'), 'utf8')).not.toBe(before);
  });
});

describe('minimesh certs create --ca/--ca-key (issuer rotation)', async () => {
  const root = join(work, 'rot-root');
  const openssl = (args: string[]): string => execFileSync('openssl', args, { encoding: 'utf8' });

  it('signs a new issuer with the existing root: openssl verifies it, the root files are untouched', async () => {
    expect((await run(['certs', 'create', '--dir', root])).code).toBe(0);
    const caBefore = readFileSync(join(root, 'ca.crt'), 'utf8');
    const out = join(work, 'rot-new');
    const r = await run([
      'certs',
      'create',
      '--ca',
      join(root, 'ca.crt'),
      '--ca-key',
      join(root, 'ca.key'),
      '--dir',
      out,
    ]);
    expect(r.stderr).toContain('a new issuer signed by');
    expect(r.stderr).toContain(`--set-file identity.issuer.tls.crtPEM=${join(out, 'issuer.crt')}`);
    expect(r.code).toBe(0);
    expect(openssl(['verify', '-CAfile', join(root, 'ca.crt'), join(out, 'issuer.crt')])).toMatch(/issuer\.crt: OK/);
    expect(statSync(join(out, 'issuer.key')).mode & 0o777).toBe(0o600);
    expect(() => statSync(join(out, 'ca.crt'))).toThrow();
    expect(readFileSync(join(root, 'ca.crt'), 'utf8')).toBe(caBefore);
    // A different key from the first issuer's, and the AKI is the root's SKI.
    expect(readFileSync(join(out, 'issuer.key'), 'utf8')).not.toBe(readFileSync(join(root, 'issuer.key'), 'utf8'));
    const ski = /Subject Key Identifier:\s*\n\s*([0-9A-F:]+)/.exec(
      openssl(['x509', '-in', join(root, 'ca.crt'), '-noout', '-text']),
    )?.[1];
    expect(ski).toBeDefined();
    expect(openssl(['x509', '-in', join(out, 'issuer.crt'), '-noout', '-text'])).toContain(ski!);
  });

  it('accepts a SEC1 root key (as step writes it)', async () => {
    const sec1 = join(work, 'ca-sec1.key');
    writeFileSync(
      sec1,
      openssl(['ec', '-in', join(root, 'ca.key'), '-outform', 'PEM']).replace(/^.*?(?=-----BEGIN)/s, ''),
    );
    expect(readFileSync(sec1, 'utf8')).toMatch(/BEGIN EC PRIVATE KEY/);
    const out = join(work, 'rot-sec1');
    const r = await run(['certs', 'create', '--ca', join(root, 'ca.crt'), '--ca-key', sec1, '--dir', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(openssl(['verify', '-CAfile', join(root, 'ca.crt'), join(out, 'issuer.crt')])).toMatch(/OK/);
  });

  it('refuses an issuer that would outlive its root, a key of another root, and --ca without --ca-key', async () => {
    const shortRoot = join(work, 'short-root');
    expect(
      (await run(['certs', 'create', '--dir', shortRoot, '--root-lifetime', '100h', '--issuer-lifetime', '10h'])).code,
    ).toBe(0);
    const long = await run([
      'certs',
      'create',
      '--ca',
      join(shortRoot, 'ca.crt'),
      '--ca-key',
      join(shortRoot, 'ca.key'),
      '--dir',
      join(work, 'x1'),
      '--issuer-lifetime',
      '101h',
    ]);
    expect(long.code).toBe(2);
    expect(long.stderr).toMatch(
      /^minimesh certs create: the issuer would expire .* after its trust anchor .*may not outlive its root/,
    );
    expect(long.stderr.trim().split('\n')).toHaveLength(1);
    expect(() => statSync(join(work, 'x1', 'issuer.crt'))).toThrow();
    // New root and issuer at once: the same rule.
    const both = await run(['certs', 'create', '--dir', join(work, 'x2'), '--issuer-lifetime', '100000h']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/may not outlive its root/);
    const wrongKey = await run([
      'certs',
      'create',
      '--ca',
      join(root, 'ca.crt'),
      '--ca-key',
      join(shortRoot, 'ca.key'),
      '--dir',
      join(work, 'x3'),
    ]);
    expect(wrongKey.code).toBe(2);
    expect(wrongKey.stderr).toMatch(/--ca-key: the key does not belong to the certificate of --ca/);
    const alone = await run(['certs', 'create', '--ca', join(root, 'ca.crt'), '--dir', join(work, 'x4')]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--ca and --ca-key go together/);
    const notCa = await run([
      'certs',
      'create',
      '--ca',
      join(root, 'missing.crt'),
      '--ca-key',
      join(root, 'ca.key'),
      '--dir',
      join(work, 'x5'),
    ]);
    expect(notCa.code).toBe(2);
    expect(notCa.stderr).toMatch(/--ca .*missing\.crt: ENOENT/);
  });
});

describe('minimesh version', async () => {
  it('prints the version of the root package.json; --client needs no cluster', async () => {
    const version = (
      JSON.parse(
        readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'package.json'), 'utf8'),
      ) as {
        version: string;
      }
    ).version;
    const r = await run(['version', '--client']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`Client version: ${version}\n`);
    expect(JSON.parse((await run(['version', '--client', '-o', 'json'])).stdout)).toEqual({ client: version });
    expect((await run(['version', '--client', '-o', 'yaml'])).stdout).toBe(`client: ${version}\n`);
    expect(await run(['version', '--client', '-o', 'wide'])).toMatchObject({ code: 2 });
    expect((await run(['--version'])).stdout).toBe(`minimesh ${version}\n`);
  });

  it('says the server version is unavailable, and why, when there is no cluster', async () => {
    const kc = join(work, 'nowhere.kubeconfig');
    writeFileSync(
      kc,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const r = await run(['version', '--kubeconfig', kc]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Client version: \S+\nServer version: unavailable\n$/);
    expect(r.stderr).toMatch(/^minimesh version: server version unavailable: .*ECONNREFUSED/);
    const bad = await run(['version', '--kubeconfig', kc, '--context', 'nope']);
    expect(bad.stderr).toMatch(/nope/);
    const y = docs((await run(['version', '--kubeconfig', kc, '-o', 'yaml'])).stdout)[0];
    expect(y).toMatchObject({ server: null, error: expect.stringContaining('ECONNREFUSED') });
  });
});

describe('the repository bin (npx minimesh)', async () => {
  it('npm links bin/minimesh.js, which runs the built CLI', async () => {
    const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
    const r = spawnSync('npx', ['--no-install', 'minimesh', 'version', '--client'], {
      cwd: repo,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Client version: \d+\.\d+\.\d+/);
  });
});

describe('CLI conventions: -n, --context, -o, color and NO_COLOR', async () => {
  const kc = join(work, 'two-contexts.kubeconfig');
  writeFileSync(
    kc,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: a, cluster: {server: "https://127.0.0.1:1"}}, {name: b, cluster: {server: "https://127.0.0.1:2"}}]',
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: first, context: {cluster: a, user: u}}, {name: second, context: {cluster: b, user: u}}]',
      'current-context: first',
      '',
    ].join('\n'),
  );

  it('check: --context picks the kubeconfig context, -n the namespace, -o json the format', async () => {
    const first = await run(['check', '--kubeconfig', kc, '-n', 'mesh-a', '-o', 'json']);
    expect(first.code).toBe(1);
    const parsed = JSON.parse(first.stdout) as { ok: boolean; results: { detail?: string }[] };
    expect(parsed.ok).toBe(false);
    expect(JSON.stringify(parsed.results)).toContain('127.0.0.1:1');
    const second = await run(['check', '--kubeconfig', kc, '--context', 'second', '-o', 'json']);
    expect(JSON.stringify(JSON.parse(second.stdout))).toContain('127.0.0.1:2');
    const missing = await run(['check', '--kubeconfig', kc, '--context', 'nope']);
    expect(missing.stdout).toMatch(/nope/);
    const yaml = await run(['check', '--kubeconfig', kc, '-n', 'mesh-a', '-o', 'yaml']);
    expect(yaml.code).toBe(1);
    const y = docs(yaml.stdout)[0] as { ok: boolean; results: { category: string; status: string }[] };
    expect(y.ok).toBe(false);
    expect(y.results[0]).toMatchObject({ category: 'kubernetes-api', status: 'fail' });
    const bad = await run(['check', '-o', 'xml']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^minimesh check: -o "xml" is not valid: expected table, wide, json, yaml/);
  });

  it('every command that reads the cluster takes --kubeconfig and --context', async () => {
    for (const args of [
      ['authz', 'shop/web'],
      ['version'],
      ['explain', 'shop/web-1', '--port', '8080'],
      ['viz', 'stat', 'deploy'],
    ]) {
      const r = await run([...args, '--kubeconfig', kc, '--context', 'second']);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).not.toBe(2);
      expect(r.stdout + r.stderr, args.join(' ')).toMatch(/127\.0\.0\.1:2/);
    }
  });

  it('check: --pre with --proxy, a bad --wait and a bad -L are refused (exit 2)', async () => {
    for (const [args, msg] of [
      [['--pre', '--proxy'], /--pre and --proxy cannot be used together/],
      [['--wait', '5'], /--wait "5" is not valid: expected a duration such as 30s, 5m or 1m30s/],
      [['--proxy', '-L', 'Bad_NS'], /--control-plane-namespace "Bad_NS" is not valid: expected a namespace name/],
    ] as const) {
      const r = await run(['check', ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(msg);
    }
  });

  it('colors the ✔/✖ marks only when asked (FORCE_COLOR) and never with NO_COLOR; no color into a pipe', () => {
    const env = (extra: Record<string, string>) => {
      const e: Record<string, string | undefined> = { ...process.env, ...extra };
      if (!('NO_COLOR' in extra)) delete e.NO_COLOR;
      if (!('FORCE_COLOR' in extra)) delete e.FORCE_COLOR;
      return e as NodeJS.ProcessEnv;
    };
    const go = (extra: Record<string, string>) =>
      spawnSync(process.execPath, [bin, 'check', '--kubeconfig', kc], { encoding: 'utf8', env: env(extra) }).stdout;
    expect(go({})).not.toContain('\x1b[');
    expect(go({ FORCE_COLOR: '1' })).toContain('\x1b[31m✖\x1b[0m');
    expect(go({ FORCE_COLOR: '1', NO_COLOR: '1' })).not.toContain('\x1b[');
  });
});
