// The generated code is checked in; this fails when someone edits proto/ without regenerating.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

it('src/gen is up to date with proto/', () => {
  const script = fileURLToPath(new URL('../scripts/generate.sh', import.meta.url));
  const out = execFileSync('bash', [script, '--check'], { encoding: 'utf8' });
  expect(out).toContain('up to date');
}, 60_000);
