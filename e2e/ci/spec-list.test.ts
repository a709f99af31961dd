// One spec list (e2e/specs.json) for the local e2e run (npm test: e2e/vitest.config.ts) and the k3d run
// (.github/workflows/e2e.yml → npm run k3d -- e2e → vitest with MINIMESH_E2E_SPECS_ONLY=1).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import config, { specs } from '../vitest.config.js';
import { repoRoot } from '../src/tools.js';

const list = (JSON.parse(readFileSync(join(repoRoot, 'e2e', 'specs.json'), 'utf8')) as { specs: string[] }).specs;

it('the local run includes the list', () => {
  expect(specs).toEqual(list);
  for (const s of list) expect(config.test?.include).toContain(s);
});

it('the k3d run is the e2e workflow, and runs exactly the list', () => {
  expect(readFileSync(join(repoRoot, '.github', 'workflows', 'e2e.yml'), 'utf8')).toMatch(/run: npm run k3d -- e2e$/m);
  expect(readFileSync(join(repoRoot, 'scripts', 'k3d.sh'), 'utf8')).toContain(
    'cd e2e && MINIMESH_E2E_SPECS_ONLY=1 npx vitest run\n',
  );
});

it('covers every spec file', () => {
  expect(list).toEqual(['specs/**/*.test.ts']);
  expect(readdirSync(join(repoRoot, 'e2e', 'specs')).filter((f) => f.endsWith('.test.ts')).length).toBeGreaterThan(0);
});
