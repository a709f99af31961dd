// The closing summary of `npm test` (scripts/summarize-tests.mjs): one line per package from the vitest
// JSON reports, and for each failure its test's name and the first lines of why, since a CI page often
// keeps only the end of the log.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot, run } from '../src/tools.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A checkout with one package whose report holds the given test files; runs the summary in it. */
async function summarize(testResults: unknown[], counts: { passed: number; failed: number }) {
  const root = mkdtempSync(join(tmpdir(), 'mm-summary-'));
  dirs.push(root);
  mkdirSync(join(root, 'packages', 'demo'), { recursive: true });
  writeFileSync(
    join(root, 'packages', 'demo', '.vitest-report.json'),
    JSON.stringify({
      // Test files are named by absolute path, as vitest does; the summary prints them relative.
      testResults: testResults.map((f) => ({ ...(f as object), name: join(root, (f as { name: string }).name) })),
      numPassedTests: counts.passed,
      numFailedTests: counts.failed,
      numPendingTests: 0,
    }),
  );
  return run('node', [join(repoRoot, 'scripts', 'summarize-tests.mjs')], { cwd: root });
}

describe('scripts/summarize-tests.mjs', () => {
  it('names a failed test and shows the first lines of its message, without colour codes', async () => {
    const message =
      'Error: a pod injected by the webhook: not true after 30000 ms\n' +
      '\u001b[31minjector log:\u001b[39m\n' +
      Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n');
    const r = await summarize(
      [
        {
          name: 'packages/demo/test/cluster.test.ts',
          status: 'failed',
          assertionResults: [
            { fullName: 'cluster works', status: 'failed', failureMessages: [message] },
            { fullName: 'cluster counts', status: 'passed', failureMessages: [] },
          ],
        },
      ],
      { passed: 1, failed: 1 },
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('packages/demo                   1 passed   1 failed');
    expect(r.stdout).toContain('✗ packages/demo/test/cluster.test.ts > cluster works\n');
    expect(r.stdout).toContain(
      '      Error: a pod injected by the webhook: not true after 30000 ms\n      injector log:\n',
    );
    expect(r.stdout).toContain('      line 9\n      … (10 more lines in the log above)\n');
    expect(r.stdout).not.toContain('line 10');
    expect(r.stdout).not.toContain('cluster counts');
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('1 passed, 1 failed');
  });

  it('counts a file that failed before its tests ran, with the file’s message', async () => {
    const r = await summarize(
      [
        {
          name: 'packages/demo/test/boot.test.ts',
          status: 'failed',
          message: 'Error: the cluster is not up',
          assertionResults: [{ fullName: 'boots', status: 'skipped', failureMessages: [] }],
        },
      ],
      { passed: 0, failed: 0 },
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('(1 suite(s) failed before their tests ran)');
    expect(r.stdout).toContain('(the file failed before its tests ran)\n      Error: the cluster is not up');
  });

  it('exits 0 when everything passed, with no failure lines', async () => {
    const r = await summarize(
      [{ name: 'packages/demo/a.test.ts', status: 'passed', assertionResults: [{ fullName: 'a', status: 'passed' }] }],
      { passed: 1, failed: 0 },
    );
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('✗');
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('1 passed, 0 failed');
  });
});
