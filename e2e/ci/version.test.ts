// One version (the root package.json's): scripts/version.mjs checks every derived place on every npm
// test, and `set` writes them all, tried here on a copy of those files.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot, run } from '../src/tools.js';

const script = join(repoRoot, 'scripts', 'version.mjs');
const tmp = mkdtempSync(join(tmpdir(), 'mm-version-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A copy of every file version.mjs reads, in the repository's layout. */
function copyTree(to: string): void {
  const files = [
    'package.json',
    'charts/minimesh/Chart.yaml',
    'charts/minimesh-crds/Chart.yaml',
    'e2e/package.json',
    'packages/config/src/version.ts',
    ...readdirSync(join(repoRoot, 'packages')).map((p) => `packages/${p}/package.json`),
  ];
  for (const f of files) {
    mkdirSync(dirname(join(to, f)), { recursive: true });
    cpSync(join(repoRoot, f), join(to, f));
  }
}

describe('scripts/version.mjs', () => {
  it('finds every derived place in agreement with package.json', async () => {
    const r = await run('node', [script, 'check']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('writes a new version everywhere, and check names a place that disagrees', async () => {
    const copy = join(tmp, 'set');
    copyTree(copy);
    const env = { ...process.env, MINIMESH_ROOT: copy };
    expect((await run('node', [script, 'set', '9.8.7'], { env })).code).toBe(0);
    expect((await run('node', [script, 'check'], { env })).code).toBe(0);
    expect((await run('node', [script, 'get'], { env })).stdout).toBe('9.8.7\n');
    const chart = readFileSync(join(copy, 'charts/minimesh/Chart.yaml'), 'utf8');
    expect(chart).toMatch(/^version: 9\.8\.7$/m);
    expect(chart).toMatch(/^appVersion: "9\.8\.7"$/m);
    const crds = readFileSync(join(copy, 'charts/minimesh-crds/Chart.yaml'), 'utf8');
    expect(crds).toMatch(/^version: 9\.8\.7$/m);
    expect(crds).toMatch(/^appVersion: "9\.8\.7"$/m);
    const cli = JSON.parse(readFileSync(join(copy, 'packages/cli/package.json'), 'utf8')) as {
      version: string;
      dependencies: Record<string, string>;
    };
    expect(cli.version).toBe('9.8.7');
    expect(cli.dependencies['@minimesh/config']).toBe('^9.8.7');
    expect(readFileSync(join(copy, 'packages/config/src/version.ts'), 'utf8')).toContain(
      "export const MINIMESH_VERSION = '9.8.7';",
    );

    writeFileSync(
      join(copy, 'charts/minimesh/Chart.yaml'),
      chart.replace('appVersion: "9.8.7"', 'appVersion: "9.8.8"'),
    );
    const r = await run('node', [script, 'check'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe('version: charts/minimesh/Chart.yaml appVersion: "9.8.8", expected "9.8.7"');
  });

  it('refuses a version that is not one', async () => {
    const copy = join(tmp, 'bad');
    copyTree(copy);
    const r = await run('node', [script, 'set', 'v1'], { env: { ...process.env, MINIMESH_ROOT: copy } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('version "v1" is not valid: expected a version such as 0.2.0');
  });
});
