// The images: one list (scripts/images.sh refs), one version (package.json), and every place that builds,
// imports or references an image takes it from there: the Dockerfile has a target per program, the chart
// references exactly the program images (the CLI image is for users, not the chart; viz's program and
// Prometheus only with viz.enabled, minimesh-cni only with cni.enabled), the workflows and scripts/k3d.sh build and import what images.sh
// lists, the k3d driver names the same fixtures, and the conformance suite's echo app is the image its
// mesh manifests run.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { MINIMESH_VERSION } from '@minimesh/config';
import { createK3dDriver } from '../drivers/k3d.js';
import { createTestCerts } from '../src/certs.js';
import { certArgs, helmTemplate, parseManifests } from '../src/chart.js';
import { repoRoot, runOk } from '../src/tools.js';

const version = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const refs = async (only: string): Promise<string[]> =>
  (await runOk('bash', [join(repoRoot, 'scripts', 'images.sh'), 'refs', `--only=${only}`])).trim().split('\n');
const read = (...p: string[]): string => readFileSync(join(repoRoot, ...p), 'utf8');
const fixtureNames = readdirSync(join(repoRoot, 'e2e', 'fixtures'))
  .filter((f) => f.endsWith('.mjs'))
  .map((f) => f.replace(/\.mjs$/, ''))
  .sort();

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'mm-images-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('scripts/images.sh', () => {
  it('names the program images ghcr.io/minimesh/<program>:<package.json version>', async () => {
    expect(await refs('programs')).toEqual(
      ['proxy-init', 'proxy', 'destination', 'policy', 'identity', 'injector', 'cni', 'cli', 'viz'].map(
        (p) => `ghcr.io/minimesh/${p}:${version}`,
      ),
    );
    expect(MINIMESH_VERSION).toBe(version);
  });

  it('names one fixture image per e2e/fixtures/*.mjs, as the k3d driver does', async () => {
    const k3d = createK3dDriver();
    expect((await refs('fixtures')).sort()).toEqual(fixtureNames.map((n) => `minimesh.test/${n}:e2e`));
    expect(fixtureNames.map((n) => k3d.fixtureImage(n))).toEqual(fixtureNames.map((n) => `minimesh.test/${n}:e2e`));
  });

  it("names the node images kubelet and kubeadm's CoreDNS use", async () => {
    expect(await refs('node')).toEqual(['registry.k8s.io/pause:3.10', 'registry.k8s.io/coredns/coredns:v1.15.0']);
  });

  it("names viz's Prometheus as Docker Hub's official image, at the version the chart installs", async () => {
    expect(await refs('viz')).toEqual(['prom/prometheus:v3.16.0']);
    const values = read('charts', 'minimesh', 'values.yaml');
    expect(values).toMatch(/^ {6}name: prom\/prometheus\n {6}version: v3\.16\.0$/m);
  });

  it("names the conformance suite's echo app as the suite's mesh manifests run it", async () => {
    // The suite's module as npm run conformance gets it (the Go module proxy, into the cache).
    const cache = process.env.MINIMESH_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'minimesh');
    const info = JSON.parse(
      await runOk('go', ['mod', 'download', '-json', 'sigs.k8s.io/gateway-api/conformance@v1.6.3'], {
        cwd: tmp,
        env: { ...process.env, GOMODCACHE: join(cache, 'go', 'mod'), GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
        timeoutMs: 300_000,
      }),
    ) as { Dir: string };
    const manifests = readFileSync(join(info.Dir, 'mesh', 'manifests.yaml'), 'utf8');
    const images = [...new Set([...manifests.matchAll(/^\s*image: (\S+)$/gm)].map((x) => x[1]))];
    expect(await refs('conformance')).toEqual(images);
  }, 300_000);

  it('lists one docker-archive tar per image under the cache', async () => {
    const cache = join(tmp, 'cache');
    const out = await runOk('bash', [join(repoRoot, 'scripts', 'images.sh'), 'list'], {
      env: { ...process.env, MINIMESH_CACHE: cache },
    });
    const lines = out.trim().split('\n');
    const all = [
      ...(await refs('programs')),
      ...(await refs('fixtures')),
      ...(await refs('node')),
      ...(await refs('viz')),
      ...(await refs('conformance')),
    ];
    expect(lines.map((l) => l.split(' ')[0])).toEqual(all);
    for (const l of lines) expect(l).toMatch(new RegExp(`^\\S+ ${cache}/images/[\\w.-]+\\.tar$`));
    expect(new Set(lines.map((l) => l.split(' ')[1])).size).toBe(lines.length);
  });

  it('says what was wrong with a bad option', async () => {
    const { run } = await import('../src/tools.js');
    const r = await run('bash', [join(repoRoot, 'scripts', 'images.sh'), 'build', '--only=programs,lasers']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      '--only: "lasers" is not a group: expected programs, fixtures, node, viz or conformance',
    );
    const usage = await run('bash', [join(repoRoot, 'scripts', 'images.sh'), 'sideways']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: bash scripts/images.sh build|list|refs|stale|sbom|sign|verify|stop');
    const sign = await run('bash', [join(repoRoot, 'scripts', 'images.sh'), 'sign']);
    expect(sign.code).toBe(1);
    expect(sign.stderr).toContain('sign needs --key=FILE (make a pair with: cosign generate-key-pair)');
  });

  it('lists as stale every image whose tar is missing', async () => {
    const out = await runOk('bash', [join(repoRoot, 'scripts', 'images.sh'), 'stale', '--only=node'], {
      env: { ...process.env, MINIMESH_CACHE: join(tmp, 'empty-cache') },
    });
    expect(out.trim().split('\n')).toEqual(await refs('node'));
  });
});

describe('the Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  /** Its stages, comments left out: the base named in FROM, the stage's name, its instructions. */
  const stages = dockerfile
    .replace(/^#.*$/gm, '')
    .split(/^(?=FROM )/m)
    .filter((s) => s.startsWith('FROM '))
    .map((s) => ({ from: s.split(/\s+/)[1]!, name: /^FROM \S+ AS ([\w-]+)/.exec(s)?.[1] ?? '', body: s }));
  it('has a final stage per program image and one for the fixtures', async () => {
    const targets = [...dockerfile.matchAll(/^FROM \S+ AS ([\w-]+)$/gm)].map((m) => m[1]);
    for (const ref of await refs('programs')) expect(targets).toContain(ref.split('/')[2]!.split(':')[0]);
    expect(targets).toContain('fixture');
  });

  it('makes every image FROM the one Node base, itself FROM scratch: no shell to RUN, exec-form node entry points', async () => {
    const base = stages.find((s) => s.name === 'node-base')!;
    expect(base.from).toBe('scratch');
    expect(base.body).not.toMatch(/^RUN /m);
    const finals = [...(await refs('programs')).map((r) => r.split('/')[2]!.split(':')[0]!), 'fixture'];
    for (const name of finals) {
      const stage = stages.find((s) => s.name === name);
      expect(stage?.from, `${name}: FROM`).toBe('node-base');
      expect(stage!.body, `${name}: no RUN (no shell in the image)`).not.toMatch(/^RUN /m);
      expect(stage!.body, `${name}: its entry point`).toMatch(/^ENTRYPOINT \["node", "\/app\/[\w/.-]+\.mjs"\]$/m);
      expect(stage!.body, `${name}: runs as a non-root user`).toMatch(/^USER [1-9]\d*:[1-9]\d*$/m);
      expect(stage!.body, `${name}: no node_modules`).not.toMatch(/node_modules/);
    }
  });

  it("runs the proxy with two malloc arenas (MALLOC_ARENA_MAX=2), as the proxy's bench measures it", () => {
    // glibc's default is an arena per allocating thread, up to 8 per core: 4 MB more private memory per
    // proxy under load (docs/proxy.md, "glibc's malloc arenas"). bench/proxy/image-env.ts reads this ENV.
    const proxy = stages.find((s) => s.name === 'proxy');
    expect(proxy, 'the proxy stage').toBeDefined();
    expect(proxy!.body).toMatch(/^ENV (?:.* )?MALLOC_ARENA_MAX=2(?: |$)/m);
  });

  it('pulls no frontend image and keeps its base an argument', () => {
    expect(dockerfile).not.toMatch(/^# *syntax=/m);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:20-bookworm-slim$/m);
  });

  it('builds the JavaScript from the lock file with npm ci, the CA bundle only as a build secret', () => {
    expect(dockerfile).toMatch(/npm ci --ignore-scripts/);
    expect(dockerfile).not.toMatch(/npm install/);
    expect(dockerfile).toMatch(/--mount=type=secret,id=npm_ca,required=false/);
    const instructions = dockerfile.replace(/^#.*$/gm, '');
    expect(instructions).not.toMatch(/ca-certificates|NODE_EXTRA_CA_CERTS=\/(?!run\/secrets)/);
  });
});

describe('the chart', () => {
  it.each([
    ['without viz', [], ['cli', 'viz', 'cni']],
    ['with viz.enabled', ['--set', 'viz.enabled=true'], ['cli', 'cni']],
    ['with cni.enabled', ['--set', 'cni.enabled=true'], ['cli', 'viz']],
  ])('references exactly the program images but the CLI, with the same version (%s)', async (_name, extra, not) => {
    const certs = await createTestCerts(join(tmp, 'certs'));
    const r = await helmTemplate('minimesh', [...certArgs(certs), ...extra]);
    expect(r.code, r.stderr).toBe(0);
    const images = new Set<string>();
    for (const obj of parseManifests(r.stdout)) {
      const text = JSON.stringify(obj);
      for (const m of text.matchAll(/"image":"([^"]+)"/g)) images.add(m[1]!);
      // The injector's configuration names the proxy and proxy-init images as { name, version }.
      for (const m of text.matchAll(/\\"image\\":\{\\"name\\":\\"([^\\]+)\\",\\"version\\":\\"([^\\]*)\\"/g))
        images.add(`${m[1]}:${m[2] || version}`);
    }
    const programs = (await refs('programs')).filter((r) => !not.some((p) => r.startsWith(`ghcr.io/minimesh/${p}:`)));
    const viz = not.includes('viz') ? [] : await refs('viz');
    expect([...images].sort()).toEqual([...programs, ...viz].sort());
  });
});

describe('the workflows and scripts/k3d.sh build and import what images.sh lists', () => {
  it('e2e: npm run k3d -- images and up', () => {
    const e2e = read('.github', 'workflows', 'e2e.yml');
    expect(e2e).toMatch(/run: npm run k3d -- images$/m);
    expect(e2e).toMatch(/run: npm run k3d -- up$/m);
    const k3d = read('scripts', 'k3d.sh');
    expect(k3d).toContain(
      'bash scripts/images.sh build --engine=system --base=default --only=programs,fixtures --no-save',
    );
    expect(k3d).toContain('image import -c "$CLUSTER" $(bash scripts/images.sh refs --only=programs,fixtures)');
  });

  it('release: every program image, multi-arch, pushed', () => {
    const release = read('.github', 'workflows', 'release.yml');
    expect(release).toContain(
      'run: bash scripts/images.sh build --engine=system --base=default --only=programs --platform=linux/amd64,linux/arm64 --push',
    );
    expect(release).not.toMatch(/ghcr\.io\/minimesh\/(proxy|destination|identity|injector|cli|viz)/);
  });

  it('release: an SBOM per image and platform (syft), images signed and SBOMs attested keyless (cosign)', () => {
    const release = read('.github', 'workflows', 'release.yml');
    const wf = parse(release) as {
      jobs: { images: { permissions: Record<string, string>; steps: { run?: string }[] } };
    };
    const runs = wf.jobs.images.steps.map((s) => s.run ?? '').join('\n');
    expect(runs).toContain(
      'bash scripts/images.sh sbom --from=registry --only=programs --platform=linux/amd64,linux/arm64',
    );
    expect(runs).toMatch(/cosign=\$\(bash scripts\/go-tool\.sh cosign\)/);
    expect(runs).toMatch(/"\$cosign" sign --yes "\$image"/);
    expect(runs).toMatch(/"\$cosign" attest --yes --type spdxjson --predicate "\$sbom" "\$image"/);
    expect(runs).toMatch(/"\$cosign" sign-blob --yes --new-bundle-format --bundle/);
    // Keyless: the workflow's OIDC token, and no key anywhere.
    expect(wf.jobs.images.permissions['id-token']).toBe('write');
    expect(release).not.toMatch(/--key|COSIGN_PRIVATE_KEY|COSIGN_PASSWORD/);
  });
});
