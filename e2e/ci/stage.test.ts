// The stage runner (scripts/stage.sh) of setup, demo and test: one line per stage, the stages' own output
// in log files, and that output shown when a stage fails. (setup's real console: e2e/test/setup-console.test.ts.)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, run } from '../src/tools.js';

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'mm-stage-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs a bash snippet with scripts/stage.sh sourced, its logs in a fresh directory. */
async function withStage(script: string, env: Record<string, string> = {}) {
  const logs = mkdtempSync(join(tmp, 'logs-'));
  const r = await run('bash', ['-c', `set -euo pipefail; source scripts/stage.sh; ${script}`], {
    cwd: repoRoot,
    env: { ...process.env, STAGE_PREFIX: 'try', STAGE_LOG_DIR: logs, ...env },
  });
  return { ...r, logs };
}

describe('scripts/stage.sh', () => {
  it('prints one line for a stage that succeeds, with its output in the log file the line names', async () => {
    const r = await withStage(
      `stage "Kubernetes binaries" "building (first time, ~18 min)" bash -c 'echo go: downloading x; echo built >&2'`,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    const log = join(r.logs, 'try-kubernetes-binaries.log');
    expect(r.stderr.replace(/done in \d+ s/, 'done in N s')).toBe(
      `[try] Kubernetes binaries: building (first time, ~18 min), output in ${log}… done in N s\n`,
    );
    expect(readFileSync(log, 'utf8')).toBe('go: downloading x\nbuilt\n');
  });

  it('runs shell functions, with no standard input', async () => {
    const r = await withStage(
      `f() { read -r x || echo "no input"; }; stage "A function" "running" f; cat "$STAGE_LOG_DIR/try-a-function.log"`,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('no input\n');
  });

  it('shows the whole log of a stage that fails, and returns its exit code', async () => {
    const r = await withStage(
      `stage "npm packages" "installing" bash -c 'echo step one; echo "npm ERR! 404" >&2; exit 3'`,
    );
    expect(r.code).toBe(3);
    const log = join(r.logs, 'try-npm-packages.log');
    expect(r.stderr).toBe(
      `[try] npm packages: installing, output in ${log}… failed after 0 s (exit 3)\n` +
        `--- ${log}:\nstep one\nnpm ERR! 404\n---\n`,
    );
  });

  it('shows the tail and the path of a long log', async () => {
    const r = await withStage(`stage "images" "building" bash -c 'seq 1 500; exit 1'`, { STAGE_TAIL: '5' });
    expect(r.code).toBe(1);
    const log = join(r.logs, 'try-images.log');
    // The elapsed seconds depend on the machine's load: any whole number.
    expect(r.stderr.replace(/failed after \d+ s/, 'failed after N s')).toBe(
      `[try] images: building, output in ${log}… failed after N s (exit 1)\n` +
        `--- the last 5 of 500 lines of ${log}:\n496\n497\n498\n499\n500\n---\n`,
    );
  });

  it('shortens a log path under $HOME to ~, notes a stage with nothing to do, and groups thousands', async () => {
    const home = mkdtempSync(join(tmp, 'home-'));
    const r = await withStage(
      `stage "x" "y" true; stage_note "npm packages" "up to date"; for n in 7 999 1093 1234567; do stage_number $n; echo; done`,
      { HOME: home, STAGE_LOG_DIR: join(home, '.cache', 'minimesh', 'logs') },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.replace(/done in \d+ s/, 'done in N s')).toBe(
      '[try] x: y, output in ~/.cache/minimesh/logs/try-x.log… done in N s\n[try] npm packages: up to date\n',
    );
    expect(r.stdout).toBe('7\n999\n1,093\n1,234,567\n');
  });
});
