// The repository's Markdown checked as a reader who cloned it would follow it: every relative link
// names a file (or directory) that exists in the repository, every #anchor a heading of that file, no
// link leaves the repository, and every repository path written in a code span exists. Pure: file
// texts in, problems out (e2e/ci/docs.test.ts reads the tree).
import { posix } from 'node:path';

export interface MarkdownLink {
  /** 1-based line of the link. */
  line: number;
  target: string;
}

/** Links of a Markdown text: [text](target), ![alt](target), [ref]: target; not in code blocks or code spans. */
export function markdownLinks(text: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const [line, raw] of proseLines(text)) {
    const prose = raw.replace(/(`+)[\s\S]*?\1/g, '');
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+["'(].*)?$/.exec(prose);
    if (definition?.[1]) links.push({ line, target: definition[1] });
    for (const m of prose.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      if (m[1]) links.push({ line, target: m[1] });
  }
  return links;
}

/** The lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, i) => {
    const opener = /^\s*(```+|~~~+)/.exec(raw)?.[1];
    if (opener !== undefined) {
      if (fence === undefined) fence = opener[0];
      else if (opener[0] === fence) fence = undefined;
    } else if (fence === undefined) out.push([i + 1, raw]);
  });
  return out;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown text's headings (duplicates get -1, -2 as on GitHub). */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inFence = false;
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    if (inFence) continue;
    const h = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!h?.[1]) continue;
    const slug = headingSlug(h[1]);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) if (m[1]) anchors.add(m[1]);
  return anchors;
}

export interface Repository {
  /** Repository-relative paths of the files (posix separators). */
  files: ReadonlySet<string>;
  /** A Markdown file's text, for its anchors. */
  read(path: string): string;
  /** Whether git ignores the path (a build output such as dist/: named in docs, never tracked). */
  ignored?(path: string): boolean;
}

function directories(files: ReadonlySet<string>): Set<string> {
  const dirs = new Set<string>();
  for (const f of files) for (let d = posix.dirname(f); d !== '.'; d = posix.dirname(d)) dirs.add(d);
  return dirs;
}

const REPO_TOP = /^(packages|docs|e2e|scripts|charts|bench|k3d|\.github|\.ci)\/[\w./@-]*$/;
const PACKAGE_LOCAL = /^(src|test)\/[\w./@-]*$/;

/**
 * Repository paths a Markdown file names in code spans (`packages/cli/src/main.ts`, in a package's
 * README also `src/plan.ts`), resolved from the repository root; a trailing :line is dropped.
 */
export function codePaths(file: string, text: string): MarkdownLink[] {
  const out: MarkdownLink[] = [];
  const pkg = /^packages\/[^/]+\//.exec(file)?.[0];
  for (const [line, raw] of proseLines(text))
    for (const m of raw.matchAll(/`([^`]+)`/g)) {
      const span = (m[1] ?? '').trim().replace(/:\d+(-\d+)?$/, '');
      if (REPO_TOP.test(span)) out.push({ line, target: span });
      else if (pkg && PACKAGE_LOCAL.test(span)) out.push({ line, target: `${pkg}${span}` });
    }
  return out;
}

/** Repository paths named in code spans that do not exist (and are not build outputs git ignores). */
export function checkCodePaths(file: string, text: string, repo: Repository): string[] {
  const dirs = directories(repo.files);
  return codePaths(file, text)
    .filter(({ target }) => {
      const path = posix.normalize(target).replace(/\/$/, '');
      return !repo.files.has(path) && !dirs.has(path) && !(repo.ignored?.(path) ?? false);
    })
    .map(({ line, target }) => `${file}:${line}: \`${target}\` does not exist in the repository`);
}

/** What is wrong with the links of one Markdown file, one line per problem ("file:line: ..."). */
export function checkLinks(file: string, text: string, repo: Repository): string[] {
  const problems: string[] = [];
  const dirs = directories(repo.files);
  for (const { line, target } of markdownLinks(text)) {
    const where = `${file}:${line}: ${target}`;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
      if (/^file:/i.test(target)) problems.push(`${where}: a file: URL points outside the repository`);
      continue; // https:, mailto: ...
    }
    const hash = target.indexOf('#');
    const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? undefined : target.slice(hash + 1);
    if (pathPart.startsWith('/')) {
      problems.push(`${where}: an absolute path points outside the repository (link relative to ${file})`);
      continue;
    }
    const resolved = pathPart === '' ? file : posix.normalize(posix.join(posix.dirname(file), pathPart));
    if (resolved === '..' || resolved.startsWith('../')) {
      problems.push(`${where}: leaves the repository`);
      continue;
    }
    const path = resolved.replace(/\/$/, '');
    if (!repo.files.has(path) && !dirs.has(path) && path !== '.') {
      problems.push(`${where}: ${path} does not exist in the repository`);
      continue;
    }
    const targetText = path === file ? text : repo.files.has(path) ? repo.read(path) : undefined;
    if (anchor && path.endsWith('.md') && targetText !== undefined && !headingAnchors(targetText).has(anchor))
      problems.push(`${where}: ${path} has no heading #${anchor}`);
  }
  return problems;
}
