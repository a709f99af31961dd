import { readFileSync } from 'node:fs';
import { mergeConfig } from 'vitest/config';
import { shared } from '../vitest.shared.js';

// The e2e workspace keeps its tests in chart/ (helm lint, template goldens, server-side dry-run), ci/
// (the workflows and images checked against the repository) and specs/ (the mesh on a cluster, driver
// chosen by MINIMESH_E2E_DRIVER) besides the shared src/ and test/. The spec files come from one list,
// specs.json, for the local run and the k3d run (MINIMESH_E2E_SPECS_ONLY=1: the specs and nothing else).
export const specs: string[] = (
  JSON.parse(readFileSync(new URL('./specs.json', import.meta.url), 'utf8')) as { specs: string[] }
).specs;
// scale/: the local cluster only (simulated nodes beside its API server), so not in specs.json.
// local/: specs that need the local cluster's node itself (its CNI files), run by the local driver only.
const others = [
  'src/**/*.test.ts',
  'test/**/*.test.ts',
  'chart/**/*.test.ts',
  'ci/**/*.test.ts',
  'scale/**/*.test.ts',
  'local/**/*.test.ts',
];

export default mergeConfig(shared, {
  test: { include: process.env.MINIMESH_E2E_SPECS_ONLY === '1' ? specs : [...others, ...specs] },
});
