// Upgrades from earlier releases (issue 32 item 4): `helm upgrade --reuse-values` renders this chart with
// the OLD release's coalesced values in place of this chart's defaults (Helm's upgrade.go, reuseValues),
// so every value this chart added since must be read through `dig`/`default`, never a bare
// `.Values.a.b`. For each earlier release whose values are stored in previous-values/ (made by
// e2e/scripts/previous-values.ts), the chart is rendered exactly as that upgrade renders it (a copy whose
// values.yaml is the old values) and must
//   1. render at all (the failure of issue 32: `nil pointer evaluating interface {}.enabled` in viz-tap.yaml),
//      (NOTES.txt included),
//   2. render the same objects as with this chart's defaults under the old values (`-f old.yaml`): a value
//      the old release lacks then falls back to the same default in the template as in values.yaml, not to
//      nothing (an empty port, a missing env).
// Also with `--set viz.enabled=true` on top: docs/viz.md turns viz on with `--reuse-values`.
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCerts, type CertFiles } from '../src/certs.js';
import { maskRender } from '../src/chart.js';
import { CERT_PLACEHOLDERS, FIXTURE_NAMESPACE, PREVIOUS_VALUES_DIR } from '../src/previous-values.js';
import { chartDir, ensureHelm, run } from '../src/tools.js';

const releases = readdirSync(PREVIOUS_VALUES_DIR)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => f.replace(/\.yaml$/, ''))
  .sort();

let tmp = '';
let certs: CertFiles;

beforeAll(async () => {
  ensureHelm();
  tmp = mkdtempSync(join(tmpdir(), 'mm-upgrade-values-'));
  certs = await createTestCerts(join(tmp, 'certs'));
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** The stored values of a release with real certificates in place of the placeholders. */
function valuesWithCerts(release: string): string {
  const pem = (file: string) => JSON.stringify(readFileSync(file, 'utf8'));
  return readFileSync(join(PREVIOUS_VALUES_DIR, `${release}.yaml`), 'utf8')
    .replace(CERT_PLACEHOLDERS.caCrt, pem(certs.caCrt))
    .replace(CERT_PLACEHOLDERS.issuerCrt, pem(certs.issuerCrt))
    .replace(CERT_PLACEHOLDERS.issuerKey, pem(certs.issuerKey));
}

async function template(chart: string, args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await run(ensureHelm(), ['template', 'minimesh', chart, '-n', FIXTURE_NAMESPACE, ...args]);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

describe('helm upgrade --reuse-values from an earlier release renders this chart', () => {
  it('has the values of the releases the issue names', () => {
    expect(releases).toEqual(expect.arrayContaining(['97042ba', '222b784']));
  });

  describe.each(releases)('from the release of %s', (release) => {
    it.each([
      ['as stored', [] as string[]],
      ['with --set viz.enabled=true', ['--set', 'viz.enabled=true']],
    ])('%s: renders, and as with this chart’s defaults', async (_what, extra) => {
      const values = valuesWithCerts(release);
      // What --reuse-values renders: this chart with the old values as its defaults.
      const reused = join(tmp, `${release}-reuse-${extra.length}`);
      cpSync(chartDir, reused, { recursive: true });
      writeFileSync(join(reused, 'values.yaml'), values);
      const a = await template(reused, extra);
      expect(a.err, `helm template with the values of ${release}`).toBe('');
      expect(a.code).toBe(0);
      // NOTES.txt too (helm template leaves it out; a client-side dry run renders it, no cluster needed).
      const notes = await run(ensureHelm(), [
        'install',
        'minimesh',
        reused,
        '-n',
        FIXTURE_NAMESPACE,
        '--dry-run=client',
        ...extra,
      ]);
      expect(notes.stderr, 'NOTES.txt').toBe('');
      expect(notes.stdout).toContain('NOTES:\nminimesh ');
      // The same values over this chart's defaults (what --reset-then-reuse-values gives).
      const file = join(tmp, `${release}.yaml`);
      writeFileSync(file, values);
      const b = await template(chartDir, ['-f', file, ...extra]);
      expect(b.code, b.err).toBe(0);
      expect(maskRender(a.out)).toBe(maskRender(b.out));
    });
  });
});
