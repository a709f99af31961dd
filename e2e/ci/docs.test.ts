// The repository stands alone: a reader who clones it can follow every link of every Markdown file
// (to a file or heading that exists here, never outside), and no tracked file points at a place on
// the machine it was written on or uses a word only its authors knew. Runs over `git ls-files`, so it
// checks everything tracked, whoever wrote it.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkCodePaths, checkLinks } from '../src/doc-links.js';
import { repoRoot } from '../src/tools.js';

const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: repoRoot, encoding: 'utf8' })
  .split('\0')
  .filter((f) => f !== '');
const files = new Set(tracked);
const read = (path: string): string => readFileSync(join(repoRoot, path), 'utf8');
const markdown = tracked.filter((f) => f.endsWith('.md'));
/** Whether git ignores a path: build outputs (dist/, runs of a bench) that docs name but git never tracks. */
const ignored = (path: string): boolean => {
  try {
    execFileSync('git', ['check-ignore', '-q', '--no-index', path], { cwd: repoRoot, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const self = relative(repoRoot, fileURLToPath(import.meta.url));

describe('links in the Markdown files', () => {
  it('finds the Markdown files', () => expect(markdown).toContain('docs/architecture.md'));
  it.each(markdown)('%s: every relative link, anchor and repository path exists in the repository', (file) => {
    const text = read(file);
    expect([
      ...checkLinks(file, text, { files, read }),
      ...checkCodePaths(file, text, { files, read, ignored }),
    ]).toEqual([]);
  });
});

/** What no tracked file may say, and why. */
const FORBIDDEN: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bthe seed\b/i, "say what is meant (the Linkerd tutorial, its cluster config, Linkerd's proxy-init arguments ...)"],
  [
    /\.\.\/shared\b/,
    'a directory beside the checkout: write the fact into our docs, or take the path from an environment variable',
  ],
  [/\/work\//, 'a path of the machine the project was written on'],
];

/** Tracked files that are text (a NUL byte in the first 8 KiB: binary, skipped). */
function textOf(path: string): string | undefined {
  const buf = readFileSync(join(repoRoot, path));
  return buf.subarray(0, 8192).includes(0) ? undefined : buf.toString('utf8');
}

describe('the repository names nothing outside itself', () => {
  it.each(FORBIDDEN.map(([re, why]) => [String(re), re, why] as const))(
    'no tracked file matches %s',
    (_name, re, why) => {
      const hits: string[] = [];
      for (const file of tracked) {
        if (file === self) continue;
        const text = textOf(file);
        if (text === undefined) continue;
        text.split('\n').forEach((line, i) => {
          if (re.test(line)) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 160)}`);
        });
      }
      expect(hits, `${why}:\n${hits.join('\n')}`).toEqual([]);
    },
  );
});
