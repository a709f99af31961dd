// docs/proxy.md shows each chain as it is written: every `const … = stack(…);` of outbound/index.ts and
// inbound/index.ts appears in it, line for line (indentation aside).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const doc = readFileSync(fileURLToPath(new URL('../../../docs/proxy.md', import.meta.url)), 'utf8');
const lines = (text: string) => text.split('\n').map((l) => l.trim());

/** The chains of a direction's index.ts: each `const x = stack(` up to its closing `);`. */
function chains(file: string): string[] {
  const src = readFileSync(fileURLToPath(new URL(file, import.meta.url)), 'utf8');
  return [...src.matchAll(/^( *)const \w+ = stack\((?:.*\);$|[\s\S]*?^\1\);$)/gm)].map((m) => m[0]);
}

describe('docs/proxy.md', () => {
  it.each([
    ['./outbound/index.ts', 5],
    ['./inbound/index.ts', 3],
  ])('shows the chains of %s as written', (file, count) => {
    const found = chains(file);
    expect(found.length).toBe(count);
    const docLines = lines(doc).join('\n');
    for (const chain of found) expect(docLines).toContain(lines(chain).join('\n'));
  });
});
