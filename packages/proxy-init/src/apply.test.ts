import { PassThrough } from 'node:stream';
import { createLogger } from '@minimesh/runtime';
import { describe, expect, it } from 'vitest';
import { applyFirewall, cleanupFirewall } from './apply.js';
import type { ResolvedBinaries } from './binaries.js';
import type { CommandRunner } from './command-runner.js';
import { planFirewall } from './plan.js';
import { LINKERD_OPTIONS } from './testdata/linkerd-args.js';

const EMPTY =
  '*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n';

/** A fake iptables: save prints the table; restore records its input and may fail. */
function fakeIptables(fail: { restoreOf?: string; saveOf?: string } = {}) {
  const calls: Array<{ argv: string[]; input?: string | undefined }> = [];
  const runner: CommandRunner = {
    describe: (argv) => argv,
    async run(argv, input) {
      calls.push({ argv, input });
      if (argv[0] === fail.restoreOf || argv[0] === fail.saveOf)
        return { code: 1, stdout: '', stderr: `${argv[0]}: line 3 failed` };
      return { code: 0, stdout: argv[0]!.endsWith('-save') ? EMPTY : '', stderr: '' };
    },
  };
  return { runner, calls };
}

const binaries: ResolvedBinaries = {
  mode: 'nft',
  byFamily: new Map([
    [4, { mode: 'nft', family: 4, save: 'iptables-nft-save', restore: 'iptables-nft-restore' }],
    [6, { mode: 'nft', family: 6, save: 'ip6tables-nft-save', restore: 'ip6tables-nft-restore' }],
  ]),
};
const logger = createLogger({ name: 'test', format: 'json', destination: new PassThrough() });

describe('applyFirewall', () => {
  it('runs one restore --noflush transaction per family, then shows the result', async () => {
    const { runner, calls } = fakeIptables();
    const reports = await applyFirewall({
      plan: planFirewall({ ...LINKERD_OPTIONS, ipv6: true }),
      binaries,
      runner,
      logger,
    });
    expect(calls.map((c) => c.argv.join(' '))).toEqual([
      'iptables-nft-save -t nat',
      'ip6tables-nft-save -t nat',
      'iptables-nft-restore --noflush',
      'ip6tables-nft-restore --noflush',
      'iptables-nft-save -t nat',
      'ip6tables-nft-save -t nat',
    ]);
    expect(calls[2]!.input).toContain(
      '-A PROXY_INIT_OUTPUT -o lo -m comment --comment "proxy-init/ignore-loopback" -j RETURN',
    );
    expect(reports.map((r) => r.family)).toEqual([4, 6]);
  });

  it('changes nothing when a table cannot be read', async () => {
    const { runner, calls } = fakeIptables({ saveOf: 'ip6tables-nft-save' });
    await expect(
      applyFirewall({ plan: planFirewall({ ...LINKERD_OPTIONS, ipv6: true }), binaries, runner, logger }),
    ).rejects.toThrow(
      'IPv6: reading the nat table: `ip6tables-nft-save -t nat` exited with 1: ip6tables-nft-save: line 3 failed',
    );
    expect(calls.some((c) => c.argv[0]!.endsWith('-restore'))).toBe(false);
  });

  it('rolls IPv4 back to how it was when the IPv6 transaction fails', async () => {
    const { runner, calls } = fakeIptables({ restoreOf: 'ip6tables-nft-restore' });
    const err = (await applyFirewall({
      plan: planFirewall({ ...LINKERD_OPTIONS, ipv6: true }),
      binaries,
      runner,
      logger,
    }).then(
      () => new Error('applied'),
      (e: unknown) => e,
    )) as Error & { exitCode?: number };
    expect(err.message).toMatch(/^IPv6: applying the nat rules: `ip6tables-nft-restore --noflush` exited with 1/);
    expect(err.exitCode).toBe(1);
    const last = calls.at(-1)!;
    expect(last.argv).toEqual(['iptables-nft-restore', '-T', 'nat']);
    expect(last.input).toBe(EMPTY);
  });

  it('passes --wait when asked', async () => {
    const { runner, calls } = fakeIptables();
    await applyFirewall({ plan: planFirewall(LINKERD_OPTIONS), binaries, runner, logger, wait: true });
    expect(calls.find((c) => c.argv[0] === 'iptables-nft-restore')!.argv).toEqual([
      'iptables-nft-restore',
      '--noflush',
      '--wait',
    ]);
  });
});

describe('cleanupFirewall', () => {
  it('runs no restore when nothing of ours is there', async () => {
    const { runner, calls } = fakeIptables();
    await cleanupFirewall({ plan: planFirewall(LINKERD_OPTIONS), binaries, runner, logger });
    expect(calls.map((c) => c.argv[0])).toEqual(['iptables-nft-save', 'iptables-nft-save']);
  });
});
