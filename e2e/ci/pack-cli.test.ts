// The CLI as the release publishes it to npm: one bundled file, the version of package.json, no
// dependencies to install, and it runs from the unpacked tarball alone.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { repoRoot, run, runOk } from '../src/tools.js';

const tmp = mkdtempSync(join(tmpdir(), 'mm-pack-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

it('npm run pack:cli makes a tarball that runs on its own', async () => {
  const tgz = (
    await runOk('node', [join(repoRoot, 'scripts', 'pack-cli.mjs'), join(tmp, 'out')], { timeoutMs: 300_000 })
  )
    .trim()
    .split('\n')
    .at(-1)!;
  const version = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
  expect(tgz).toBe(join(tmp, 'out', `minimesh-cli-${version}.tgz`));
  await runOk('tar', ['xzf', tgz, '-C', tmp]);
  const pkg = JSON.parse(readFileSync(join(tmp, 'package', 'package.json'), 'utf8')) as Record<string, unknown>;
  expect(pkg).toMatchObject({ name: '@minimesh/cli', version, bin: { minimesh: './bin/minimesh.mjs' } });
  expect(pkg.dependencies).toBeUndefined();
  expect(pkg.private).toBeUndefined();
  // Run from a directory with no node_modules anywhere above it.
  const help = await run('node', [join(tmp, 'package', 'bin', 'minimesh.mjs'), '--help'], { cwd: tmp });
  expect(help.code, help.stderr).toBe(0);
  expect(help.stdout).toContain('Usage: minimesh <command> [flags]');
  const certs = await run(
    'node',
    [join(tmp, 'package', 'bin', 'minimesh.mjs'), 'certs', 'create', '--dir', join(tmp, 'certs')],
    {
      cwd: tmp,
    },
  );
  expect(certs.code, certs.stderr).toBe(0);
  expect(readFileSync(join(tmp, 'certs', 'ca.crt'), 'utf8')).toContain('BEGIN CERTIFICATE');
  // As a user installs it: `npm install -g` of the tarball (into a temporary prefix), then `minimesh` on PATH.
  const prefix = join(tmp, 'prefix');
  await runOk('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--offline', tgz], {
    cwd: tmp,
    timeoutMs: 120_000,
  });
  const installed = await run(join(prefix, 'bin', 'minimesh'), ['version', '--client'], { cwd: tmp });
  expect(installed.code, installed.stderr).toBe(0);
  expect(installed.stdout).toBe(`Client version: ${version}\n`);
}, 300_000);
