// Shared test inputs: proxy-init's golden payload, its --simulate output, and a live-looking save.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));
/** proxy-init's golden restore payload for Linkerd's proxy-init arguments. */
export const LINKERD_ARGS_NAT = readFileSync(
  join(here, '../../../../proxy-init/src/testdata/linkerd-args-nat.restore'),
  'utf8',
);

/** What `iptables-legacy-save -t nat` prints in a pod after proxy-init ran (counters, header, other rules). */
export const LIVE_SAVE = readFileSync(join(here, '../../../../proxy-init/src/testdata/live-nat.save'), 'utf8');

const PROXY_INIT_BIN = join(here, '../../../../proxy-init/dist/main.js');

/** `minimesh-proxy-init --simulate` with the given arguments: its whole output (log lines and payload). */
export function simulateProxyInit(args: string[]): string {
  const r = spawnSync(
    process.execPath,
    [PROXY_INIT_BIN, '--simulate', '--ipv6=false', '--log-format', 'plain', ...args],
    { encoding: 'utf8', timeout: 30_000 },
  );
  if (r.status !== 0) throw new Error(`proxy-init --simulate exited ${r.status}: ${r.stderr}${r.stdout}`);
  return `${r.stdout}${r.stderr}`;
}
