import { describe, expect, it } from 'vitest';
import { checkCodePaths, checkLinks, codePaths, headingAnchors, headingSlug, markdownLinks } from './doc-links.js';

describe('markdownLinks', () => {
  it('finds inline links, images and reference definitions, not what is in code', () => {
    const text = [
      'See [the map](architecture.md) and ![a chart](img/chart.png "title").',
      '[ref]: ../README.md#install',
      'Not `[code](nowhere.md)` nor:',
      '```',
      '[fenced](nowhere.md)',
      '```',
      'A [link with `code` in it](policy.md#the-index).',
    ].join('\n');
    expect(markdownLinks(text)).toEqual([
      { line: 1, target: 'architecture.md' },
      { line: 1, target: 'img/chart.png' },
      { line: 2, target: '../README.md#install' },
      { line: 7, target: 'policy.md#the-index' },
    ]);
  });
});

describe('headingSlug / headingAnchors', () => {
  it.each([
    ['Layers between packages', 'layers-between-packages'],
    ['One home per shared job', 'one-home-per-shared-job'],
    ['`minimesh check --pre`: before an install', 'minimesh-check---pre-before-an-install'],
    ['What is in the box?', 'what-is-in-the-box'],
    ['Install on a cluster (Helm)', 'install-on-a-cluster-helm'],
  ])('%j → #%s', (heading, slug) => expect(headingSlug(heading)).toBe(slug));

  it('numbers repeated headings as GitHub does, and skips code blocks', () => {
    const anchors = headingAnchors('# Notes\n## Notes\n```\n# not a heading\n```\n### Figures ##\n');
    expect([...anchors]).toEqual(['notes', 'notes-1', 'figures']);
  });
});

describe('checkLinks', () => {
  const files = new Set(['README.md', 'docs/architecture.md', 'docs/policy.md', 'packages/cli/src/main.ts']);
  const texts: Record<string, string> = { 'docs/policy.md': '# Policy\n## The index\n' };
  const repo = { files, read: (p: string) => texts[p] ?? '' };

  it('passes links to files, directories and headings that exist', () => {
    const text =
      '[a](policy.md) [b](policy.md#the-index) [c](../packages/cli/src/main.ts) [d](../packages/cli/) [e](#top) [f](https://linkerd.io/)\n# Top';
    expect(checkLinks('docs/architecture.md', text, repo)).toEqual([]);
  });

  it('reports a missing file, a missing heading, an absolute path and a path that leaves the repository', () => {
    const text = [
      '[gone](removed.md)',
      '[no heading](policy.md#the-server)',
      '[absolute](/opt/elsewhere/REFERENCE.md)',
      '[outside](../../elsewhere/notes.md)',
      '[file url](file:///etc/hosts)',
    ].join('\n');
    expect(checkLinks('docs/architecture.md', text, repo)).toEqual([
      'docs/architecture.md:1: removed.md: docs/removed.md does not exist in the repository',
      'docs/architecture.md:2: policy.md#the-server: docs/policy.md has no heading #the-server',
      'docs/architecture.md:3: /opt/elsewhere/REFERENCE.md: an absolute path points outside the repository (link relative to docs/architecture.md)',
      'docs/architecture.md:4: ../../elsewhere/notes.md: leaves the repository',
      'docs/architecture.md:5: file:///etc/hosts: a file: URL points outside the repository',
    ]);
  });
});

describe('codePaths / checkCodePaths', () => {
  const files = new Set(['docs/e2e.md', 'packages/proxy-init/src/plan.ts', 'scripts/images.sh']);
  const repo = { files, read: () => '', ignored: (p: string) => p.includes('/dist/') };

  it('reads repository paths from code spans, package-local ones in a package README', () => {
    const text = 'See `packages/proxy-init/src/plan.ts:12`, `src/plan.ts`, `scripts/images.sh build` and `npm test`.';
    expect(codePaths('packages/proxy-init/README.md', text).map((l) => l.target)).toEqual([
      'packages/proxy-init/src/plan.ts',
      'packages/proxy-init/src/plan.ts',
    ]);
    expect(codePaths('docs/e2e.md', 'In `src/plan.ts`.')).toEqual([]);
  });

  it('reports a path that does not exist, not one that git ignores', () => {
    const text = '`packages/proxy-init/src/cidr.ts` and `packages/proxy-init/dist/main.js`';
    expect(checkCodePaths('docs/e2e.md', text, repo)).toEqual([
      'docs/e2e.md:1: `packages/proxy-init/src/cidr.ts` does not exist in the repository',
    ]);
  });
});
