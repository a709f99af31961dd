// Go programs of the benches (load generators written against linkerd2-proxy-api's Go clients, as
// Linkerd's own figures were measured): built once per source into ~/.cache/minimesh/bin from the Go
// module proxy, the way scripts/go-tool.sh builds its tools.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { phase } from './report.js';

/** The binary built from the Go module in `dir` (bench/go-clients), or undefined when there is no Go. */
export function goBenchBinary(dir: string, name: string): string | undefined {
  const hash = createHash('sha256');
  for (const f of readdirSync(dir).sort())
    if (f === 'go.mod' || f === 'go.sum' || f.endsWith('.go')) hash.update(f).update(readFileSync(join(dir, f)));
  const cache = process.env.MINIMESH_CACHE ?? join(homedir(), '.cache', 'minimesh');
  const bin = join(cache, 'bin', `${name}-${hash.digest('hex').slice(0, 12)}`);
  if (existsSync(bin)) return bin;
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  phase(`building ${name} (Go) into ${join(cache, 'bin')}`);
  mkdirSync(join(cache, 'bin'), { recursive: true });
  execFileSync('go', ['build', '-trimpath', '-o', `${bin}.tmp`, '.'], {
    cwd: dir,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      GOMODCACHE: join(cache, 'go', 'mod'),
      GOCACHE: join(cache, 'go', 'build'),
      GOTOOLCHAIN: 'local',
      GOFLAGS: '-mod=mod',
      CGO_ENABLED: '0',
    },
  });
  renameSync(`${bin}.tmp`, bin);
  return bin;
}
