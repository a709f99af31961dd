// .github/workflows checked against the repository: what a workflow runs must exist here (npm scripts,
// files), and the hygiene Linkerd's workflows have (actions pinned by commit, least privilege, timeouts,
// superseded runs cancelled, no secrets where a pull request runs). actionlint + shellcheck run in
// `npm run lint` (scripts/lint-workflows.sh).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../src/tools.js';

interface Step {
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}
interface Job {
  'timeout-minutes'?: number;
  permissions?: Record<string, string>;
  steps: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  permissions?: Record<string, string>;
  concurrency?: { group: string; 'cancel-in-progress': boolean };
  jobs: Record<string, Job>;
}

const dir = join(repoRoot, '.github', 'workflows');
const files = readdirSync(dir).filter((f) => f.endsWith('.yml'));
const workflows = files.map((f) => {
  const text = readFileSync(join(dir, f), 'utf8');
  return { file: f, text, wf: parse(text) as Workflow };
});
const rootScripts = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: object }).scripts;

/** The scripts of a workspace named by -w @minimesh/<dir>. */
function workspaceScripts(name: string): object {
  const dirName = name.replace('@minimesh/', '');
  const path = dirName === 'e2e' ? join(repoRoot, 'e2e') : join(repoRoot, 'packages', dirName);
  return (JSON.parse(readFileSync(join(path, 'package.json'), 'utf8')) as { scripts: object }).scripts;
}

/** Every shell line a workflow runs, and every file name it hashes for a cache key. */
function commands(wf: Workflow): string[] {
  return Object.values(wf.jobs).flatMap((job) => job.steps.map((s) => s.run ?? '').filter(Boolean));
}

it('has the three workflows of issue 19', () => {
  expect(files.sort()).toEqual(['ci.yml', 'e2e.yml', 'release.yml']);
});

describe.each(workflows)('$file', ({ file, text, wf }) => {
  it('names only npm scripts that exist', () => {
    const found: string[] = [];
    for (const cmd of commands(wf)) {
      for (const m of cmd.matchAll(/npm run ([\w:.-]+)(?: -w (@minimesh\/[\w-]+))?/g)) {
        const [, script, workspace] = m;
        found.push(script!);
        const scripts = workspace ? workspaceScripts(workspace) : rootScripts;
        expect(Object.keys(scripts), `${file}: npm run ${script}${workspace ? ` -w ${workspace}` : ''}`).toContain(
          script,
        );
      }
    }
    if (file !== 'release.yml' || found.length > 0) expect(found.length).toBeGreaterThan(0);
  });

  it('names only files that exist', () => {
    const paths = new Set<string>();
    const sources = [...commands(wf), ...[...text.matchAll(/hashFiles\(([^)]*)\)/g)].map((m) => m[1]!)];
    for (const s of sources)
      for (const m of s.matchAll(/(?<![\w/.-])((?:scripts|e2e|k3d|charts|packages|docker)\/[\w./-]*[\w-])/g))
        paths.add(m[1]!);
    for (const p of paths) expect(existsSync(join(repoRoot, p)), `${file} names ${p}`).toBe(true);
  });

  it('pins every action by full commit SHA with its version in a comment', () => {
    const uses = [...text.matchAll(/^\s*-?\s*uses: *(\S+)(.*)$/gm)];
    expect(uses.length).toBeGreaterThan(0);
    for (const [line, ref, rest] of uses) {
      expect(ref, line).toMatch(/^[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[0-9a-f]{40}$/);
      expect(rest, line).toMatch(/^ # v\d+\.\d+\.\d+$/);
    }
  });

  it('grants contents: read at the top and more only to the jobs that need it', () => {
    expect(wf.permissions).toEqual({ contents: 'read' });
    for (const [name, job] of Object.entries(wf.jobs)) {
      if (!job.permissions) continue;
      expect(file, `job ${name} asks for ${JSON.stringify(job.permissions)}`).toBe('release.yml');
      for (const [scope, level] of Object.entries(job.permissions))
        expect(['contents:read', 'packages:write', 'id-token:write'], `${name}: ${scope}: ${level}`).toContain(
          `${scope}:${level}`,
        );
    }
  });

  it('puts a timeout on every job', () => {
    for (const [name, job] of Object.entries(wf.jobs)) {
      expect(job['timeout-minutes'], name).toBeGreaterThan(0);
      expect(job['timeout-minutes'], name).toBeLessThanOrEqual(90);
    }
  });

  it('has a concurrency group', () => {
    expect(wf.concurrency?.group).toContain('${{ github.workflow }}');
    // A release is never cancelled half-pushed; pull-request and main runs cancel superseded ones.
    expect(wf.concurrency?.['cancel-in-progress']).toBe(file !== 'release.yml');
  });

  it('uses no secret where a pull request runs', () => {
    if (!('pull_request' in wf.on) && !('pull_request_target' in wf.on)) return;
    expect(text).not.toMatch(/secrets\./);
    expect('pull_request_target' in wf.on).toBe(false);
    for (const job of Object.values(wf.jobs))
      for (const s of job.steps)
        if (s.uses?.startsWith('actions/checkout@')) expect(s.with?.['persist-credentials']).toBe(false);
  });
});
