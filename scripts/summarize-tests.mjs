// Sums the vitest JSON reports of every workspace into one closing line: "N passed, N failed".
// Exits non-zero when any test failed or when no test ran at all.
import { readFileSync, existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stripVTControlCharacters } from 'node:util';

const dirs = [...readdirSync('packages').map((d) => join('packages', d)), 'e2e'];
let passed = 0,
  failed = 0,
  skipped = 0;
const rows = [];
for (const dir of dirs) {
  const file = join(dir, '.vitest-report.json');
  if (!existsSync(file)) continue;
  const r = JSON.parse(readFileSync(file, 'utf8'));
  // A suite that fails before its tests run (a beforeAll, an import) reports its tests as skipped:
  // count the suite itself as a failure so it cannot hide.
  const brokenSuites = (r.testResults ?? []).filter(
    (f) => f.status === 'failed' && f.assertionResults.every((a) => a.status !== 'failed'),
  ).length;
  const f = r.numFailedTests + brokenSuites;
  passed += r.numPassedTests;
  failed += f;
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
  rows.push(
    `${dir.padEnd(28)} ${String(r.numPassedTests).padStart(4)} passed ${String(f).padStart(3)} failed` +
      (brokenSuites ? ` (${brokenSuites} suite(s) failed before their tests ran)` : ''),
  );
  // Name what failed, and how, so a red summary says which test and why without digging through the
  // log above (a CI page often keeps only the end of the log).
  for (const file of r.testResults ?? []) {
    const failures = file.assertionResults
      .filter((a) => a.status === 'failed')
      .map((a) => ({ name: a.fullName, message: a.failureMessages?.[0] ?? '' }));
    if (failures.length === 0 && file.status === 'failed')
      failures.push({ name: '(the file failed before its tests ran)', message: file.message ?? '' });
    for (const { name, message } of failures) {
      rows.push(`  ✗ ${relative(process.cwd(), file.name)} > ${name}`);
      rows.push(...excerpt(message));
    }
  }
}

// The first lines of a failure message, without colour codes, indented under the test's name.
function excerpt(message, maxLines = 12) {
  if (!message) return [];
  const lines = stripVTControlCharacters(message).split('\n');
  const kept = lines.slice(0, maxLines).map((l) => `      ${l}`);
  if (lines.length > maxLines) kept.push(`      … (${lines.length - maxLines} more lines in the log above)`);
  return kept;
}
console.log('\n' + rows.join('\n'));
console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ''));
process.exit(failed > 0 || passed === 0 ? 1 : 0);
