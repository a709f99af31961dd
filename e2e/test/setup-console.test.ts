// The console of scripts/setup.sh on this machine: one line per stage and nothing else (the build output
// goes to log files, scripts/stage.sh). Here, not in ci/: it runs the real setup, which needs root and this
// machine's caches (the chart CI job runs ci/ without either).
import { describe, expect, it } from 'vitest';
import { repoRoot, run } from '../src/tools.js';

describe('scripts/setup.sh', () => {
  // After the setup npm test itself ran: everything is cached, so this is the console of a warm run.
  // Whether a stage has work or not, the console shows stage lines and nothing else.
  it('prints stage lines only: no build output on the console', async () => {
    const r = await run('bash', ['scripts/setup.sh'], { cwd: repoRoot, timeoutMs: 900_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    for (const line of lines) expect(line).toMatch(/^\[setup\] (?:[\w .-]+: \S.*|ready in [\d,]+ s)$/);
    const names = lines.map((l) => /^\[setup\] ([^:]+):/.exec(l)?.[1]).filter(Boolean);
    expect(names).toEqual(expect.arrayContaining(['Debian packages', 'npm packages', 'minimesh CLI']));
    expect(new Set(names).size).toBe(names.length);
    expect(lines.at(-1)).toMatch(/^\[setup\] ready in [\d,]+ s$/);
    expect(r.stderr).not.toMatch(/go: downloading|npm (?:WARN|ERR)|Step \d+\/|#\d+ \[/);
  }, 900_000);
});
