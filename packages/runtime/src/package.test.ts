// The package lists what its code uses and nothing else (pino-pretty was listed for years and never
// loaded: the plain log format is our own one-line formatter, logger.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
const sources = readdirSync(join(root, 'src'))
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
  .map((f) => readFileSync(join(root, 'src', f), 'utf8'))
  .join('\n');

describe('@minimesh/runtime package.json', () => {
  it.each(Object.keys(pkg.dependencies ?? {}))('%s is imported by src/', (dep) => {
    expect(sources).toMatch(new RegExp(`from '${dep.replace(/[/.]/g, '\\$&')}(/[^']*)?'`));
  });
});
