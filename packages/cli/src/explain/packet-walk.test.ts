import { LINKERD_PROXY_INIT_ARGS } from '@minimesh/test-support/linkerd';
import { describe, expect, it } from 'vitest';
import { parseNatTable } from '@minimesh/proxy-init';
import { walkPacket, type Packet } from './packet-walk.js';
import { LIVE_SAVE, LINKERD_ARGS_NAT, simulateProxyInit } from './testdata/nat-fixtures.js';

const POD_IP = '10.23.0.7';
const inbound = (dport: number, source?: string): Packet => ({
  direction: 'inbound',
  protocol: 'tcp',
  dport,
  destination: POD_IP,
  inInterface: 'eth0',
  ...(source ? { source } : {}),
});
const outbound = (dport: number, over: Partial<Packet> = {}): Packet => ({
  direction: 'outbound',
  protocol: 'tcp',
  dport,
  destination: '10.247.0.10',
  uid: 1000,
  outInterface: 'eth0',
  ...over,
});

/** [name, packet, verdict kind, redirect port or undefined, the comments of the rules that matched, in order] */
const CASES: [string, Packet, string, number | undefined, string[]][] = [
  [
    'inbound to an app port',
    inbound(8080),
    'redirect',
    4143,
    ['proxy-init/install-proxy-init-prerouting', 'proxy-init/redirect-all-incoming-to-proxy-port'],
  ],
  [
    'inbound to 4191 (admin) is ignored',
    inbound(4191),
    'accept',
    undefined,
    ['proxy-init/install-proxy-init-prerouting', 'proxy-init/ignore-port-4190,4191,4567,4568'],
  ],
  [
    'inbound to 4568 is ignored',
    inbound(4568),
    'accept',
    undefined,
    ['proxy-init/install-proxy-init-prerouting', 'proxy-init/ignore-port-4190,4191,4567,4568'],
  ],
  [
    'outbound from uid 2102 (the proxy)',
    outbound(80, { uid: 2102 }),
    'accept',
    undefined,
    ['proxy-init/install-proxy-init-output', 'proxy-init/ignore-proxy-user-id'],
  ],
  [
    'outbound over lo',
    outbound(8080, { destination: '127.0.0.1', outInterface: 'lo' }),
    'accept',
    undefined,
    ['proxy-init/install-proxy-init-output', 'proxy-init/ignore-loopback'],
  ],
  [
    'outbound to 443',
    outbound(443),
    'accept',
    undefined,
    ['proxy-init/install-proxy-init-output', 'proxy-init/ignore-port-443,6443'],
  ],
  [
    'outbound to 6443',
    outbound(6443),
    'accept',
    undefined,
    ['proxy-init/install-proxy-init-output', 'proxy-init/ignore-port-443,6443'],
  ],
  [
    'outbound to 8080 is redirected',
    outbound(8080),
    'redirect',
    4140,
    ['proxy-init/install-proxy-init-output', 'proxy-init/redirect-all-outgoing-to-proxy-port'],
  ],
  [
    'outbound to 80 from root is redirected',
    outbound(80, { uid: 0 }),
    'redirect',
    4140,
    ['proxy-init/install-proxy-init-output', 'proxy-init/redirect-all-outgoing-to-proxy-port'],
  ],
];

function matched(walk: ReturnType<typeof walkPacket>): string[] {
  return walk.steps.filter((s) => s.result === 'yes').map((s) => s.comment ?? s.line);
}

describe.each([
  ["proxy-init's golden payload", () => LINKERD_ARGS_NAT],
  ['minimesh-proxy-init --simulate output', () => simulateProxyInit([...LINKERD_PROXY_INIT_ARGS])],
])('packet walk over %s', (_source, text) => {
  const table = parseNatTable(text());
  it.each(CASES)('%s', (_name, packet, kind, port, comments) => {
    const walk = walkPacket(table, packet);
    expect(walk.verdict.kind).toBe(kind);
    if (walk.verdict.kind === 'redirect') expect(walk.verdict.port).toBe(port);
    expect(matched(walk)).toEqual(comments);
    expect(walk.uncertain).toBe(false);
  });
});

describe('packet walk details', () => {
  const table = parseNatTable(LINKERD_ARGS_NAT);
  it('checks every outbound rule in order before the redirect, each with its reason', () => {
    const walk = walkPacket(table, outbound(8080));
    expect(walk.steps.map((s) => [s.chain, s.index, s.result])).toEqual([
      ['OUTPUT', 1, 'yes'],
      ['PROXY_INIT_OUTPUT', 1, 'no'],
      ['PROXY_INIT_OUTPUT', 2, 'no'],
      ['PROXY_INIT_OUTPUT', 3, 'no'],
      ['PROXY_INIT_OUTPUT', 4, 'yes'],
    ]);
    expect(walk.steps[1]?.reasons[0]).toBe('uid 1000 is not uid 2102');
    expect(walk.steps[2]?.reasons[0]).toBe('it leaves over eth0, not lo');
    expect(walk.steps[3]?.reasons[0]).toBe('port 8080 is not in 443,6443');
  });
  it('a RETURN from a built-in chain (no jump) ends at that chain', () => {
    const t = parseNatTable(
      '*nat\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -p tcp -j RETURN\n-A OUTPUT -p tcp -j REDIRECT --to-ports 1\nCOMMIT\n',
    );
    expect(walkPacket(t, outbound(80)).verdict).toMatchObject({ kind: 'accept', how: 'return-from-builtin' });
  });
  it('an empty table accepts by policy', () => {
    const walk = walkPacket(parseNatTable('*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n'), inbound(80));
    expect(walk.verdict).toEqual({ kind: 'accept', chain: 'PREROUTING', how: 'policy' });
    expect(walk.steps).toEqual([]);
  });

  const live = parseNatTable(LIVE_SAVE);
  it.each([
    ['a port inside an ignored range 25:30', outbound(27), 'accept'],
    ['a port just past it', outbound(31), 'redirect'],
    ['inbound from an ignored subnet', inbound(8080, '10.99.3.4'), 'accept'],
    ['inbound from elsewhere', inbound(8080, '10.23.0.9'), 'redirect'],
  ])('live save: %s', (_n, packet, kind) => {
    expect(walkPacket(live, packet).verdict.kind).toBe(kind);
  });
  it('an inbound packet of unknown source cannot be judged against -s, and says so', () => {
    const walk = walkPacket(live, inbound(8080));
    expect(walk.uncertain).toBe(true);
    const step = walk.steps.find((s) => s.comment === 'proxy-init/ignore-subnet-10.99.0.0/16');
    expect(step?.result).toBe('unknown');
    expect(walk.verdict.kind).toBe('redirect');
  });

  it.each([
    ['ports-to-redirect: only 8080 goes to the proxy', ['--ports-to-redirect', '8080,9090'], inbound(8080), 'redirect'],
    ['ports-to-redirect: 7000 is not listed', ['--ports-to-redirect', '8080,9090'], inbound(7000), 'accept'],
    ['proxy gid', ['--proxy-gid', '3000'], outbound(80, { uid: 5, gid: 3000 }), 'accept'],
    ['proxy gid, other gid', ['--proxy-gid', '3000'], outbound(80, { uid: 5, gid: 4 }), 'redirect'],
    ['outbound range 8000-8100 ignored', ['--outbound-ports-to-ignore', '8000-8100'], outbound(8050), 'accept'],
    ['subnet ignored (inbound source)', ['--subnets-to-ignore', '10.50.0.0/16'], inbound(8080, '10.50.1.1'), 'accept'],
  ])('simulate %s', (_n, args, packet, kind) => {
    const table = parseNatTable(simulateProxyInit(['--proxy-uid', '2102', ...args]));
    expect(table.warnings).toEqual([]);
    expect(walkPacket(table, packet).verdict.kind).toBe(kind);
  });

  it('negated matches flip', () => {
    const t = parseNatTable(
      '*nat\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT ! -o lo -p tcp -j REDIRECT --to-ports 4140\nCOMMIT\n',
    );
    expect(walkPacket(t, outbound(80)).verdict.kind).toBe('redirect');
    expect(walkPacket(t, outbound(80, { outInterface: 'lo' })).verdict.kind).toBe('accept');
  });
  it('a jump loop is caught', () => {
    const t = parseNatTable('*nat\n:OUTPUT ACCEPT [0:0]\n:A - [0:0]\n-A OUTPUT -j A\n-A A -j A\nCOMMIT\n');
    expect(walkPacket(t, outbound(80)).verdict.kind).toBe('loop');
  });
});
