import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { CommandRunner } from './command-runner.js';
import { proxyInitMain, type ProgramDeps } from './program.js';
import { LINKERD_PROXY_INIT_ARGS } from '@minimesh/test-support/linkerd';

function harness(over: Partial<ProgramDeps> = {}) {
  const out = new PassThrough();
  const err = new PassThrough();
  let text = '';
  let errText = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  err.on('data', (d: Buffer) => (errText += d.toString()));
  const ran: string[][] = [];
  const runner: CommandRunner = {
    describe: (argv) => argv,
    async run(argv) {
      ran.push(argv);
      return { code: 0, stdout: '*nat\nCOMMIT\n', stderr: '' };
    },
  };
  const deps: ProgramDeps = {
    stdout: out,
    stderr: err,
    lookup: (n) => `/sbin/${n}`,
    hasNetAdmin: () => true,
    runner: () => runner,
    ...over,
  };
  return { deps, ran, text: () => text, err: () => errText };
}

describe('proxyInitMain', () => {
  it('--simulate prints the rules and runs nothing', async () => {
    const h = harness();
    expect(await proxyInitMain(['--simulate', ...LINKERD_PROXY_INIT_ARGS], h.deps)).toBe(0);
    expect(h.ran).toEqual([]);
    expect(h.text()).toContain(
      '-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102 -m comment --comment "proxy-init/ignore-proxy-user-id" -j RETURN',
    );
    expect(h.text()).toContain(
      'would run /sbin/iptables-legacy-save -t nat, then /sbin/iptables-legacy-restore --noflush',
    );
  });

  it("--simulate works without iptables installed, with the mode's names", async () => {
    const h = harness({ lookup: () => undefined });
    expect(await proxyInitMain(['--simulate', '--iptables-mode', 'nft', ...LINKERD_PROXY_INIT_ARGS], h.deps)).toBe(0);
    expect(h.text()).toContain('would run iptables-nft-save -t nat, then iptables-nft-restore --noflush');
  });

  it('refuses without CAP_NET_ADMIN, before running anything', async () => {
    const h = harness({ hasNetAdmin: () => false });
    expect(await proxyInitMain([...LINKERD_PROXY_INIT_ARGS], h.deps)).toBe(2);
    expect(h.err()).toMatch(/^minimesh-proxy-init: no CAP_NET_ADMIN/);
    expect(h.ran).toEqual([]);
  });

  it('refuses bad input with exit code 2 before running anything', async () => {
    const h = harness();
    expect(await proxyInitMain(['--proxy-uid', '2102', '--inbound-ports-to-ignore', '4190,x'], h.deps)).toBe(2);
    expect(await proxyInitMain(['stray'], h.deps)).toBe(2);
    expect(h.err()).toBe(
      'minimesh-proxy-init: --inbound-ports-to-ignore: "x" is not valid: expected a port (e.g. 4190) or an inclusive range lo-hi (e.g. 4000-4010)\n' +
        'minimesh-proxy-init: unexpected argument "stray" (see minimesh-proxy-init --help)\n',
    );
    expect(h.ran).toEqual([]);
  });

  it('runs the close-wait sysctl first when asked', async () => {
    const h = harness();
    expect(await proxyInitMain([...LINKERD_PROXY_INIT_ARGS, '--timeout-close-wait-secs', '30'], h.deps)).toBe(0);
    expect(h.ran[0]).toEqual(['sysctl', '-w', 'net.netfilter.nf_conntrack_tcp_timeout_close_wait=30']);
  });

  it('prints help', async () => {
    const h = harness();
    expect(await proxyInitMain(['--help'], h.deps)).toBe(0);
    expect(h.text()).toContain('--inbound-ports-to-ignore <value>');
  });
});
