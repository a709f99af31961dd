// Imports inside the proxy flow one way (docs/proxy.md, "Layout"): the chains (main.ts, proxy.ts,
// index.ts, outbound/index.ts, inbound/index.ts) import stages and libraries; stages (the other files of
// outbound/, inbound/ and stack/) import libraries and, within their direction, each other; libraries
// (everything else) import only libraries. Read from the source, every relative import of every file.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));
const CHAIN = new Set(['main.ts', 'proxy.ts', 'index.ts', 'outbound/index.ts', 'inbound/index.ts']);
const STAGE_DIRS = ['outbound', 'inbound', 'stack'];

type Role = 'chain' | 'stage' | 'library';

function roleOf(file: string): Role {
  if (CHAIN.has(file)) return 'chain';
  return STAGE_DIRS.includes(file.split('/')[0] ?? '') && file.includes('/') ? 'stage' : 'library';
}

/** Why `from` may not import `to` (paths relative to src/), or undefined when it may. */
function violation(from: string, to: string): string | undefined {
  const [a, b] = [roleOf(from), roleOf(to)];
  if (a === 'stage' && b === 'chain') return 'a stage imports a chain';
  if (a === 'library' && b !== 'library') return `a library imports a ${b}`;
  if (a === 'stage' && b === 'stage') {
    const [da, db] = [from.split('/')[0], to.split('/')[0]];
    if (da === 'stack' && db !== 'stack') return `a shared stage imports a stage of ${db}/`;
    if (da !== db && db !== 'stack') return `a stage of ${da}/ imports a stage of ${db}/`;
  }
  return undefined;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [relative(SRC, p)] : [];
  });
}

/** Relative imports of a file, as paths relative to src/ (".js" specifiers name the ".ts" source). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specs.map((s) => relative(SRC, resolve(SRC, dirname(file), s)).replace(/\.js$/, '.ts'));
}

describe('imports inside packages/proxy', () => {
  const files = sources(SRC);

  it('finds the chains, the stages and the libraries where the layout says', () => {
    expect(files.filter((f) => roleOf(f) === 'chain').sort()).toEqual([...CHAIN].sort());
    expect(files.filter((f) => roleOf(f) === 'stage').length).toBeGreaterThanOrEqual(20);
    for (const f of files) for (const i of importsOf(f)) expect(files, `${f} imports ${i}`).toContain(i);
  });

  it('flow one way: stages never import a chain, libraries never import a stage or a chain', () => {
    const found = files.flatMap((f) =>
      importsOf(f).flatMap((i) => {
        const why = violation(f, i);
        return why ? [`${f} → ${i}: ${why}`] : [];
      }),
    );
    expect(found).toEqual([]);
  });

  it.each([
    ['http/exchange.ts', 'outbound/route.ts', 'a library imports a stage'],
    ['tap/server.ts', 'inbound/tls.ts', 'a library imports a stage'],
    ['policy/runtime.ts', 'proxy.ts', 'a library imports a chain'],
    ['outbound/route.ts', 'outbound/index.ts', 'a stage imports a chain'],
    ['outbound/connect.ts', 'inbound/connect.ts', 'a stage of outbound/ imports a stage of inbound/'],
    ['stack/tap.ts', 'outbound/route.ts', 'a shared stage imports a stage of outbound/'],
  ])('would refuse %s importing %s (%s)', (from, to, why) => {
    expect(violation(from, to)).toBe(why);
  });

  it.each([
    ['outbound/index.ts', 'outbound/route.ts'],
    ['outbound/route.ts', 'http/retry.ts'],
    ['inbound/detect.ts', 'inbound/tls.ts'],
    ['outbound/connect.ts', 'stack/tap.ts'],
  ])('allows %s importing %s', (from, to) => {
    expect(violation(from, to)).toBeUndefined();
  });
});
