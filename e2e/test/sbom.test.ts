// The images' SBOMs and signatures, on the images scripts/images.sh built on this machine (npm test builds
// them in setup; syft and cosign come from scripts/go-tool.sh):
// - every package syft finds in a program image (the shipped ones; the fixtures are built the same way) is
//   one the repository expects: a Debian
//   package of docker/debian-packages.txt, an npm package of package-lock.json at that version, or the
//   Node binary at the version scripts/images.sh installs; and the Debian ones are exactly the list;
// - every file in the image is accounted for: the program under /app, node, a file of one of those
//   Debian packages (the md5sums the image carries for them), or one of the few files the Dockerfile
//   writes. No shell, no package manager, no stray binary;
// - a key pair signs every program image (its tar) and its SBOM, and verifies them; a changed SBOM fails.
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, run, runOk } from '../src/tools.js';

const images = join(repoRoot, 'scripts', 'images.sh');
const NODE_VERSION = /^NODE_VERSION=([\d.]+)$/m.exec(readFileSync(images, 'utf8'))![1]!;
const VERSION = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string }>;
};
const debianList = readFileSync(join(repoRoot, 'docker', 'debian-packages.txt'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.startsWith('#'))
  .map((l) => l.trim().split(/\s+/) as [string, string]);
/** The Debian packages an image is built with: the Node base's, and iptables' in proxy-init. */
const expectedDebian = (name: string): string[] =>
  debianList
    .filter(([part]) => part === 'node-base' || part === name)
    .map(([, pkg]) => pkg)
    .sort();

/** The files the Dockerfile writes itself, beside /app, node and the Debian packages' files. */
const WRITTEN = [
  'etc/passwd',
  'etc/group',
  'etc/nsswitch.conf',
  'etc/os-release',
  'usr/local/bin/node',
  'run/xtables.lock',
];

let tmp: string;
let sboms: { ref: string; name: string; file: string }[];
beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'mm-sbom-'));
  const out = await runOk('bash', [images, 'sbom', '--only=programs', `--out=${tmp}/sbom`], {
    timeoutMs: 1_200_000,
  });
  sboms = out
    .trim()
    .split('\n')
    .map((l) => {
      const [ref, file] = l.split(' ') as [string, string];
      return { ref, file, name: ref.split('/').pop()!.split(':')[0]! };
    });
}, 1_200_000);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface SpdxPackage {
  name: string;
  versionInfo?: string;
  externalRefs?: { referenceType: string; referenceLocator: string }[];
}

/** Each package's purl, or the package itself when it has none (the image's own entry has none). */
function purls(file: string): string[] {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { spdxVersion: string; packages: SpdxPackage[] };
  expect(doc.spdxVersion).toBe('SPDX-2.3');
  return doc.packages.flatMap(
    (p) => p.externalRefs?.filter((r) => r.referenceType === 'purl').map((r) => r.referenceLocator) ?? [],
  );
}

/** Whether package-lock.json has that npm package at that version (at any depth). */
function inLock(name: string, version: string): boolean {
  return Object.entries(lock.packages).some(
    ([path, entry]) =>
      (path === `node_modules/${name}` || path.endsWith(`/node_modules/${name}`)) && entry.version === version,
  );
}

describe('the SBOM of every program image', () => {
  it('lists every program image scripts/images.sh builds', async () => {
    const refs = (await runOk('bash', [images, 'refs', '--only=programs'])).trim().split('\n');
    expect(sboms.map((s) => s.ref)).toEqual(refs);
  });

  it('names only packages the lock file, the Debian package list or the Node version expects', () => {
    for (const { ref, name, file } of sboms) {
      const debian: string[] = [];
      const stray: string[] = [];
      let npm = 0;
      let node = 0;
      for (const purl of purls(file)) {
        const deb = /^pkg:deb\/debian\/([^@]+)@[^?]+\?(?:.*&)?distro=debian-12/.exec(purl);
        const js = /^pkg:npm\/([^@]+|@[^@]+)@([^?#]+)/.exec(purl);
        if (deb) debian.push(decodeURIComponent(deb[1]!));
        else if (js && inLock(decodeURIComponent(js[1]!), js[2]!)) npm++;
        // The bundle's own lock names the program itself (@minimesh/<program>, the fixtures' @minimesh/e2e).
        else if (js && decodeURIComponent(js[1]!).startsWith('@minimesh/') && js[2] === VERSION) continue;
        // The image itself (syft's source entry).
        else if (purl.startsWith('pkg:oci/')) continue;
        else if (/^pkg:generic\/node@/.test(purl) && purl.startsWith(`pkg:generic/node@${NODE_VERSION}`)) node++;
        else stray.push(purl);
      }
      expect(stray, `${ref}: packages no list of the repository names`).toEqual([]);
      expect([...new Set(debian)].sort(), `${ref}: its Debian packages`).toEqual(
        expectedDebian(name === 'proxy-init' ? 'proxy-init' : 'node-base'),
      );
      expect(node, `${ref}: the node binary (Node ${NODE_VERSION})`).toBe(1);
      // Every program bundles npm packages (pino at least; gRPC, fastify, YAML...).
      expect(npm, `${ref}: the npm packages in its bundle`).toBeGreaterThan(0);
    }
  });
});

describe('the files of the images', () => {
  /** The layer tars of a docker-archive image, in order. */
  function layers(tar: string): string[] {
    const manifest = JSON.parse(execFileSync('tar', ['-xOf', tar, 'manifest.json'], { encoding: 'utf8' })) as {
      Layers: string[];
    }[];
    return manifest[0]!.Layers;
  }
  /** Every entry of every layer: type ('-' file, 'l' link, 'd' directory, 'h' hard link) and path. */
  function layerEntries(tar: string): { type: string; path: string }[] {
    return layers(tar).flatMap((layer) =>
      execFileSync('bash', ['-c', 'tar -xOf "$1" "$2" | tar -tvf -', '--', tar, layer], {
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      })
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => ({ type: l[0]!, path: l.split(/\s+/)[5]!.replace(/^\.?\//, '') })),
    );
  }
  /** The paths in the md5sums files the image carries for its Debian packages, under merged /usr. */
  function packageFiles(tar: string): Set<string> {
    const text = layers(tar)
      .map((layer) =>
        execFileSync(
          'bash',
          [
            '-c',
            `tar -xOf "$1" "$2" | tar -xOf - --wildcards 'var/lib/dpkg/status.d/*.md5sums' 2>/dev/null || true`,
            '--',
            tar,
            layer,
          ],
          { encoding: 'utf8', maxBuffer: 64 << 20 },
        ),
      )
      .join('');
    return new Set(
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(/\s+/)[1]!.replace(/^(lib|lib64|bin|sbin)\//, 'usr/$1/')),
    );
  }

  it.each(['proxy-init', 'proxy', 'destination', 'cli', 'http-echo'])(
    '%s: every file is accounted for',
    async (name) => {
      const list = (await runOk('bash', [images, 'list', '--only=programs,fixtures'])).trim().split('\n');
      const tar = list.map((l) => l.split(' ')).find(([ref]) => ref!.split('/').pop()!.startsWith(`${name}:`))![1]!;
      const owned = packageFiles(tar);
      expect(owned.size).toBeGreaterThan(0);
      const docs = new Set(expectedDebian(name).map((p) => `usr/share/doc/${p}/copyright`));
      const stray = layerEntries(tar)
        .filter((e) => e.type === '-' || e.type === 'h')
        .map((e) => e.path)
        .filter(
          (p) =>
            !p.startsWith('app/') &&
            !WRITTEN.includes(p) &&
            !owned.has(p) &&
            !docs.has(p) &&
            !/^var\/lib\/dpkg\/status\.d\/[\w.+-]+$/.test(p),
        );
      expect(stray, `${name}: files that are not the program's, node's or an expected Debian package's`).toEqual([]);
      const paths = layerEntries(tar).map((e) => e.path);
      for (const tool of ['sh', 'bash', 'dash', 'busybox', 'apt', 'apt-get', 'dpkg', 'npm', 'env'])
        expect(
          paths.filter((p) => p.split('/').pop() === tool),
          `${name}: no ${tool}`,
        ).toEqual([]);
    },
  );
});

describe('signatures (cosign, a key pair made here)', () => {
  it('signs every program image and its SBOM, verifies them, and rejects a changed SBOM', async () => {
    const cosign = (await runOk('bash', [join(repoRoot, 'scripts', 'go-tool.sh'), 'cosign'])).trim();
    const env = { ...process.env, COSIGN_PASSWORD: 'minimesh-test' };
    await runOk(cosign, ['generate-key-pair', '--output-key-prefix', join(tmp, 'test')], { cwd: tmp, env });
    const out = `--out=${tmp}/sbom`;
    const signed = await runOk('bash', [images, 'sign', `--key=${tmp}/test.key`, '--only=programs', out], {
      env,
      timeoutMs: 600_000,
    });
    expect(signed.trim().split('\n')).toHaveLength(2 * sboms.filter((s) => s.ref.startsWith('ghcr.io/')).length);
    const ok = await run('bash', [images, 'verify', `--key=${tmp}/test.pub`, '--only=programs', out], {
      timeoutMs: 600_000,
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).not.toContain('NOT verified');

    const proxy = sboms.find((s) => s.name === 'proxy')!;
    appendFileSync(proxy.file, '\n');
    const bad = await run('bash', [images, 'verify', `--key=${tmp}/test.pub`, '--only=programs', out], {
      timeoutMs: 600_000,
    });
    expect(bad.code).toBe(1);
    expect(bad.stdout.split('\n').filter((l) => l.includes('NOT verified'))).toEqual([
      expect.stringContaining(`${proxy.ref} ${proxy.file} NOT verified`),
    ]);
    expect(bad.stderr).toContain('some signatures did not verify');
  }, 1_200_000);
});
