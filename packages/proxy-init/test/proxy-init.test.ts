// proxy-init for real: the built binary inside fresh network namespaces, in nft and legacy modes,
// checked through iptables-save and through real connections whose original destination is read
// with our SO_ORIGINAL_DST addon. Runs as root; every namespace is deleted afterwards.
import { LINKERD_NAT_CHAINS, LINKERD_PROXY_INIT_ARGS } from '@minimesh/test-support/linkerd';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainLines, createPair, EMPTY_NAT, normalizeSave, type Pair } from './netns.js';

describe.each(['nft', 'legacy'] as const)('proxy-init --iptables-mode %s in a fresh pod namespace', (mode) => {
  const save = `iptables-${mode}-save`;
  let pair: Pair;
  let firstSave = '';

  beforeAll(async () => {
    pair = await createPair();
    // The "pod": the proxy's two listeners, an ignored inbound port, an app port on loopback.
    await pair.listen(pair.pod, ['0.0.0.0:4143', '0.0.0.0:4140', '0.0.0.0:4190', '127.0.0.1:7000']);
    // The "peer": a remote app port and the API server's ignored ports.
    await pair.listen(pair.peer, ['0.0.0.0:9000', '0.0.0.0:443', '0.0.0.0:6443']);
  });
  afterAll(async () => {
    await pair?.destroy();
  });

  it('without proxy-init, connections go where they were sent (control)', async () => {
    expect(await pair.connect(pair.pod, pair.peerIp, 9000)).toMatchObject({ listener: '0.0.0.0:9000' });
    expect(await pair.connect(pair.peer, pair.podIp, 8080)).toEqual({ error: 'ECONNREFUSED' });
  });

  it("applies exactly Linkerd's chains, in order, with Linkerd's comments", async () => {
    const r = await pair.proxyInit(['--iptables-mode', mode, ...LINKERD_PROXY_INIT_ARGS]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // it prints what it applied and the resulting iptables-save
    expect(r.stdout).toContain('IPv4: applying in one transaction');
    expect(r.stdout).toContain('IPv4: iptables-save -t nat now shows:');
    firstSave = await pair.save(pair.pod, save);
    for (const [chain, lines] of Object.entries(LINKERD_NAT_CHAINS))
      expect(chainLines(firstSave, chain), chain).toEqual(lines);
    expect(firstSave.split('\n').filter((l) => l.startsWith('-A '))).toHaveLength(8);
    // the listing an operator sees, as in the Linkerd tutorial
    const listing = await pair.exec(pair.pod, [`iptables-${mode}`, '-t', 'nat', '-L', 'PROXY_INIT_OUTPUT', '-n', '-v']);
    expect(listing.stdout).toMatch(/Chain PROXY_INIT_OUTPUT \(1 references\)/);
    expect(listing.stdout).toMatch(/RETURN .*owner UID match 2102 \/\* proxy-init\/ignore-proxy-user-id \*\//);
    // (iptables 1.8.9 prints the protocol as its number: 6 is tcp)
    expect(listing.stdout).toMatch(
      /REDIRECT\s+(tcp|6)\s.*\/\* proxy-init\/redirect-all-outgoing-to-proxy-port \*\/ redir ports 4140/,
    );
  });

  it('sends inbound TCP for an app port to 4143, where the addon reads the dialed address', async () => {
    const answer = await pair.connect(pair.peer, pair.podIp, 8080);
    expect(answer).toMatchObject({
      listener: '0.0.0.0:4143',
      originalDst: { address: pair.podIp, port: 8080, family: 4 },
    });
    expect(answer.remote).toMatch(new RegExp(`^${pair.peerIp.replace(/\./g, '\\.')}:`));
  });

  it('leaves inbound TCP to an ignored port alone (not redirected)', async () => {
    expect(await pair.connect(pair.peer, pair.podIp, 4190)).toMatchObject({
      listener: '0.0.0.0:4190',
      originalDst: { error: 'MINIMESH_PROXY_NOT_REDIRECTED' },
    });
  });

  it('sends outbound TCP from a non-proxy process to 4140, with the remote address as original destination', async () => {
    expect(await pair.connect(pair.pod, pair.peerIp, 9000)).toMatchObject({
      listener: '0.0.0.0:4140',
      originalDst: { address: pair.peerIp, port: 9000, family: 4 },
    });
    expect(await pair.connect(pair.pod, pair.peerIp, 9000, { uid: 1000 })).toMatchObject({ listener: '0.0.0.0:4140' });
  });

  it("does not redirect the proxy's own traffic (uid 2102)", async () => {
    expect(await pair.connect(pair.pod, pair.peerIp, 9000, { uid: 2102 })).toMatchObject({ listener: '0.0.0.0:9000' });
  });

  it('does not redirect outbound TCP to ignored ports', async () => {
    expect(await pair.connect(pair.pod, pair.peerIp, 443)).toMatchObject({ listener: '0.0.0.0:443' });
    expect(await pair.connect(pair.pod, pair.peerIp, 6443)).toMatchObject({ listener: '0.0.0.0:6443' });
  });

  it('does not redirect loopback traffic', async () => {
    expect(await pair.connect(pair.pod, '127.0.0.1', 7000)).toMatchObject({
      listener: '127.0.0.1:7000',
      originalDst: { error: 'MINIMESH_PROXY_NOT_REDIRECTED' },
    });
  });

  it('re-running yields an identical nat table (chains reused, jumps not duplicated)', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await pair.proxyInit(['--iptables-mode', mode, ...LINKERD_PROXY_INIT_ARGS]);
      expect(r.code).toBe(0);
    }
    expect(normalizeSave(await pair.save(pair.pod, save))).toBe(normalizeSave(firstSave));
    // and it still works
    expect(await pair.connect(pair.peer, pair.podIp, 8080)).toMatchObject({ listener: '0.0.0.0:4143' });
  });

  it('--cleanup removes exactly what it added, leaving an empty nat table', async () => {
    const r = await pair.proxyInit(['--iptables-mode', mode, '--ipv6=false', '--cleanup']);
    expect(r.code).toBe(0);
    expect(normalizeSave(await pair.save(pair.pod, save))).toBe(EMPTY_NAT);
    expect(await pair.connect(pair.pod, pair.peerIp, 9000)).toMatchObject({ listener: '0.0.0.0:9000' });
    // cleaning a clean table is fine too
    expect((await pair.proxyInit(['--iptables-mode', mode, '--ipv6=false', '--cleanup'])).code).toBe(0);
  });
});

describe('proxy-init with --ipv6=true (nft)', () => {
  let pair: Pair;
  beforeAll(async () => {
    pair = await createPair();
    // one dual-stack inbound socket, so IPv4 connections arrive IPv4-mapped on an IPv6 socket
    await pair.listen(pair.pod, ['dual:[::]:4143', '0.0.0.0:4140', '[::]:4140']);
    await pair.listen(pair.peer, ['[::]:9000']);
  });
  afterAll(async () => {
    await pair?.destroy();
  });

  it('configures ip6tables with the same chains and redirects IPv6 in both directions', async () => {
    const r = await pair.proxyInit([
      '--iptables-mode',
      'nft',
      ...LINKERD_PROXY_INIT_ARGS.filter((a) => a !== '--ipv6=false'),
      '--ipv6',
    ]);
    expect(r.code).toBe(0);
    const save6 = await pair.save(pair.pod, 'ip6tables-nft-save');
    for (const [chain, lines] of Object.entries(LINKERD_NAT_CHAINS))
      expect(chainLines(save6, chain), chain).toEqual(lines);
    expect(await pair.connect(pair.peer, pair.podIp6, 8080)).toMatchObject({
      listener: 'dual:[::]:4143',
      originalDst: { address: pair.podIp6, port: 8080, family: 6 },
    });
    expect(await pair.connect(pair.pod, pair.peerIp6, 9000)).toMatchObject({
      listener: '[::]:4140',
      originalDst: { address: pair.peerIp6, port: 9000, family: 6 },
    });
    expect(await pair.connect(pair.pod, pair.peerIp6, 9000, { uid: 2102 })).toMatchObject({ listener: '[::]:9000' });
    // IPv4 got its rules too; on the dual-stack socket the addon asks the IPv4 way and answers plain IPv4
    expect(await pair.connect(pair.peer, pair.podIp, 8080)).toMatchObject({
      listener: 'dual:[::]:4143',
      originalDst: { address: pair.podIp, port: 8080, family: 4 },
    });
    const cleanup = await pair.proxyInit(['--iptables-mode', 'nft', '--cleanup']);
    expect(cleanup.code).toBe(0);
    expect(normalizeSave(await pair.save(pair.pod, 'ip6tables-nft-save'))).toBe(EMPTY_NAT);
    expect(normalizeSave(await pair.save(pair.pod, 'iptables-nft-save'))).toBe(EMPTY_NAT);
  });
});
