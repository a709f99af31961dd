// Writes e2e/chart/previous-values/<commit>.yaml for each commit named: the values a release of
// charts/minimesh at that commit holds, as `helm upgrade --reuse-values` hands them to a later chart
// (e2e/src/previous-values.ts says how). The files are committed, so the test needs no git history (CI
// clones shallow); run this when a release is added to the list.
//
//   npx tsx e2e/scripts/previous-values.ts 97042ba 222b784
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PREVIOUS_VALUES_DIR, previousValues } from '../src/previous-values.js';

const commits = process.argv.slice(2);
if (commits.length === 0 || commits.some((c) => !/^[0-9a-f]{7,40}$/.test(c))) {
  process.stderr.write('previous-values: expected commits of earlier releases (hex), e.g. 97042ba 222b784\n');
  process.exit(2);
}
mkdirSync(PREVIOUS_VALUES_DIR, { recursive: true });
for (const commit of commits) {
  const values = await previousValues(commit);
  const head = [
    `# The values of a release of charts/minimesh at ${commit}, as \`helm upgrade --reuse-values\` gives them`,
    "# to a later chart: that chart's defaults coalesced with the e2e faults install's flags (certificates",
    `# are placeholders). Made by \`npx tsx e2e/scripts/previous-values.ts ${commit}\`; read by`,
    '# e2e/chart/upgrade-values.test.ts.',
  ];
  writeFileSync(join(PREVIOUS_VALUES_DIR, `${commit}.yaml`), `${head.join('\n')}\n${values}`);
  console.log(`wrote e2e/chart/previous-values/${commit}.yaml`);
}
