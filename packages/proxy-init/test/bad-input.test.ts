// The real binary refusing bad input: exit code 2, one clear line on stderr, and nothing applied
// (checked in a fresh namespace's nat table after every case). Also --simulate, --netns and
// --timeout-close-wait-secs end to end. Runs as root.
import { LINKERD_PROXY_INIT_ARGS } from '@minimesh/test-support/linkerd';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, createPair, EMPTY_NAT, normalizeSave, run, type Pair } from './netns.js';

const P = 'minimesh-proxy-init: ';

let pair: Pair;
beforeAll(async () => {
  pair = await createPair();
});
afterAll(async () => {
  await pair?.destroy();
});

async function expectNothingApplied(): Promise<void> {
  expect(normalizeSave(await pair.save(pair.pod, 'iptables-nft-save'))).toBe(EMPTY_NAT);
  expect(normalizeSave(await pair.save(pair.pod, 'iptables-legacy-save'))).toBe(EMPTY_NAT);
}

describe('bad input: exit 2, one line, nothing applied', () => {
  it.each([
    [
      'a port outside 1-65535',
      ['--incoming-proxy-port', '70000'],
      `${P}--incoming-proxy-port: "70000" is not valid: expected a TCP port number 1-65535`,
    ],
    [
      'port 0',
      ['--outgoing-proxy-port', '0'],
      `${P}--outgoing-proxy-port: "0" is not valid: expected a TCP port number 1-65535`,
    ],
    [
      'an ignored port outside 1-65535',
      ['--outbound-ports-to-ignore', '443,65536'],
      `${P}--outbound-ports-to-ignore: "65536" is not valid: expected a TCP port number 1-65535`,
    ],
    [
      'a malformed range',
      ['--inbound-ports-to-ignore', '4190,4567-'],
      `${P}--inbound-ports-to-ignore: "4567-" is not valid: expected a port (e.g. 4190) or an inclusive range lo-hi (e.g. 4000-4010)`,
    ],
    [
      'a backwards range',
      ['--inbound-ports-to-ignore', '5000-4000'],
      `${P}--inbound-ports-to-ignore: "5000-4000" is not valid: expected a range whose start is not above its end (5000 > 4000)`,
    ],
    [
      'a bad CIDR',
      ['--subnets-to-ignore', '10.0.0.0/8,10.300.0.0/16'],
      `${P}--subnets-to-ignore: "10.300.0.0/16" is not valid: expected a CIDR such as 10.0.0.0/8 or fd00::/8`,
    ],
    [
      'an unknown mode',
      ['--iptables-mode', 'ebpf'],
      `${P}--iptables-mode: "ebpf" is not valid: expected legacy, nft or plain`,
    ],
    [
      'an unknown firewall binary',
      ['--firewall-bin-path', 'nft'],
      `${P}--firewall-bin-path: "nft" is not valid: expected iptables-legacy, iptables-nft or iptables (or use --iptables-mode)`,
    ],
    [
      'a bad uid',
      ['--proxy-uid', 'proxy'],
      `${P}--proxy-uid: "proxy" is not valid: expected a numeric id 0-4294967294, or -1 for none`,
    ],
    [
      'an unknown flag',
      ['--redirect-everything'],
      `minimesh-proxy-init: Unknown option '--redirect-everything' (see minimesh-proxy-init --help)`,
    ],
  ])('%s', async (_what, bad, message) => {
    const r = await pair.proxyInit([...LINKERD_PROXY_INIT_ARGS, ...bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`${message}\n`);
    await expectNothingApplied();
  });

  it('a missing iptables binary: names the mode and the binaries looked for', async () => {
    const r = await pair.exec(pair.pod, [
      'env',
      'PATH=/nonexistent',
      process.execPath,
      BIN,
      '--iptables-mode',
      'nft',
      ...LINKERD_PROXY_INIT_ARGS,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `${P}iptables mode nft: its binaries are not installed and no fallback is: looked in PATH for nft (iptables-nft-save, iptables-nft-restore); then plain (iptables-save, iptables-restore); then legacy (iptables-legacy-save, iptables-legacy-restore)\n`,
    );
    await expectNothingApplied();
  });

  it('no CAP_NET_ADMIN: says so', async () => {
    const r = await pair.exec(pair.pod, [
      'setpriv',
      '--bounding-set=-net_admin',
      '--inh-caps=-net_admin',
      process.execPath,
      BIN,
      '--iptables-mode',
      'nft',
      ...LINKERD_PROXY_INIT_ARGS,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `${P}no CAP_NET_ADMIN: changing iptables needs the NET_ADMIN capability (run as root, or give the container NET_ADMIN and NET_RAW); nothing was changed\n`,
    );
    await expectNothingApplied();
  });
});

describe('--simulate, --netns, --timeout-close-wait-secs', () => {
  it('--simulate prints the rules and changes nothing', async () => {
    const r = await pair.proxyInit(['--simulate', '--iptables-mode', 'nft', ...LINKERD_PROXY_INIT_ARGS]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      '-A PROXY_INIT_REDIRECT -p tcp -m comment --comment "proxy-init/redirect-all-incoming-to-proxy-port" -j REDIRECT --to-ports 4143',
    );
    expect(r.stdout).toContain(
      '-A OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT',
    );
    await expectNothingApplied();
  });

  it('--netns PATH configures that namespace from outside it, JSON logs on request', async () => {
    const nsPath = `/var/run/netns/${pair.pod}`;
    const r = await run([
      process.execPath,
      BIN,
      '--netns',
      nsPath,
      '--iptables-mode',
      'nft',
      '--log-format',
      'json',
      '--timeout-close-wait-secs',
      '17',
      ...LINKERD_PROXY_INIT_ARGS,
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const logs = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; command?: string });
    expect(logs.find((l) => l.command)?.command).toBe(
      `nsenter --net=${nsPath} -- /usr/sbin/iptables-nft-restore --noflush`,
    );
    expect(
      logs.some(
        (l) => l.msg.startsWith('IPv4: iptables-save -t nat now shows:') && l.msg.includes('-j PROXY_INIT_OUTPUT'),
      ),
    ).toBe(true);
    const saved = await pair.save(pair.pod, 'iptables-nft-save');
    expect(saved).toContain(
      '-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT',
    );
    const sysctl = await pair.exec(pair.pod, ['sysctl', '-n', 'net.netfilter.nf_conntrack_tcp_timeout_close_wait']);
    expect(sysctl.stdout.trim()).toBe('17');
    const cleanup = await run([
      process.execPath,
      BIN,
      '--netns',
      nsPath,
      '--iptables-mode',
      'nft',
      '--ipv6=false',
      '--cleanup',
    ]);
    expect(cleanup.code).toBe(0);
    await expectNothingApplied();
  });
});
