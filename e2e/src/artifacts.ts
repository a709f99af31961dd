// Where the e2e specs keep their evidence: e2e/.artifacts (or $MINIMESH_E2E_ARTIFACTS), written as the
// spec goes, so a crash, a timeout or any vitest reporter (default, JSON, CI) leaves it behind. The CI
// workflows upload the directory when a run fails.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { repoRoot } from './tools.js';

/** The artifacts directory of this run. */
export function artifactsDir(): string {
  return process.env.MINIMESH_E2E_ARTIFACTS ?? join(repoRoot, 'e2e', '.artifacts');
}

/** Files under one prefix of the artifacts directory (e.g. `faults`). */
export class Artifacts {
  readonly dir: string;

  constructor(readonly prefix: string) {
    this.dir = artifactsDir();
    mkdirSync(this.dir, { recursive: true });
  }

  /** The path of `<prefix>-<name>` (a name with slashes makes sub-directories). */
  path(name: string): string {
    const p = join(this.dir, `${this.prefix}-${name}`);
    mkdirSync(dirname(p), { recursive: true });
    return p;
  }

  write(name: string, text: string): string {
    const p = this.path(name);
    writeFileSync(p, text);
    return p;
  }

  append(name: string, text: string): void {
    appendFileSync(this.path(name), text);
  }
}
