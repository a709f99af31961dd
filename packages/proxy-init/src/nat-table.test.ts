import { describe, expect, it } from 'vitest';
import { cidrContains, formatCidr } from '@minimesh/config';
import { parseCidrText, parseNatTable, parsePortRange, parseRule, tokenize } from './nat-table.js';
import { LIVE_SAVE, LINKERD_ARGS_NAT } from './testdata/nat-fixtures.js';

describe('tokenize', () => {
  it.each([
    ['-A X -j RETURN', ['-A', 'X', '-j', 'RETURN']],
    ['-A X -m comment --comment "a b c" -j RETURN', ['-A', 'X', '-m', 'comment', '--comment', 'a b c', '-j', 'RETURN']],
    ['-A X --comment "say \\"hi\\"" -j A', ['-A', 'X', '--comment', 'say "hi"', '-j', 'A']],
    ['  -A   X  ', ['-A', 'X']],
  ])('%s', (line, words) => {
    expect(tokenize(line)).toEqual(words);
  });
  it('refuses an unterminated quote', () => {
    expect(() => tokenize('-A X --comment "open')).toThrow(/unterminated quote/);
  });
});

describe('parsePortRange / parseCidrText', () => {
  it.each([
    ['80', { lo: 80, hi: 80 }],
    ['25:30', { lo: 25, hi: 30 }],
    ['25-30', { lo: 25, hi: 30 }],
  ])('port %s', (text, range) => expect(parsePortRange(text)).toEqual(range));
  it.each(['x', '30:25', '70000', ''])('bad port %s', (text) => expect(() => parsePortRange(text)).toThrow());
  it.each([
    ['10.99.0.0/16', '10.99.255.1', true],
    ['10.99.0.0/16', '10.98.0.1', false],
    ['10.0.0.7', '10.0.0.7', true],
    ['10.0.0.7/32', '10.0.0.8', false],
    ['0.0.0.0/0', '192.0.2.1', true],
    ['10.0.0.0/255.0.0.0', '10.1.2.3', true],
    ['fd00::/8', 'fd12::1', true],
    ['fd00::/8', 'fe80::1', false],
    ['fd00::/8', '10.0.0.1', false],
    ['::1/128', '::1', true],
  ])('%s contains %s: %s', (cidr, ip, yes) => expect(cidrContains(parseCidrText(cidr), ip)).toBe(yes));
});

describe('parseRule', () => {
  it.each([
    {
      line: '-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102 -m comment --comment "proxy-init/ignore-proxy-user-id" -j RETURN',
      want: {
        chain: 'PROXY_INIT_OUTPUT',
        uidOwner: { value: { lo: 2102, hi: 2102 }, negated: false },
        comment: 'proxy-init/ignore-proxy-user-id',
        target: { kind: 'RETURN' },
      },
    },
    {
      line: '-A PROXY_INIT_OUTPUT -m owner --gid-owner 2102 -j RETURN',
      want: { gidOwner: { value: { lo: 2102, hi: 2102 }, negated: false }, target: { kind: 'RETURN' } },
    },
    {
      line: '-A PROXY_INIT_OUTPUT -o lo -m comment --comment "proxy-init/ignore-loopback" -j RETURN',
      want: { outInterface: { value: 'lo', negated: false }, target: { kind: 'RETURN' } },
    },
    {
      line: '-A PROXY_INIT_OUTPUT -p tcp -m multiport --dports 443,6443,25:30 -j RETURN',
      want: {
        protocol: { value: 'tcp', negated: false },
        dports: {
          value: [
            { lo: 443, hi: 443 },
            { lo: 6443, hi: 6443 },
            { lo: 25, hi: 30 },
          ],
          negated: false,
        },
      },
    },
    {
      line: '-A PROXY_INIT_REDIRECT -p tcp -m tcp --dport 8080 -m comment --comment "proxy-init/redirect-port-8080-to-proxy-port" -j REDIRECT --to-ports 4143',
      want: {
        dport: { value: { lo: 8080, hi: 8080 }, negated: false },
        target: { kind: 'REDIRECT', toPorts: { lo: 4143, hi: 4143 } },
      },
    },
    {
      line: '-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT',
      want: { target: { kind: 'jump', chain: 'PROXY_INIT_REDIRECT' }, unsupported: [] },
    },
    {
      line: '-A OUTPUT ! -o lo -d 10.0.0.0/8 -j ACCEPT',
      want: { outInterface: { value: 'lo', negated: true }, target: { kind: 'ACCEPT' } },
    },
    {
      line: '-A OUTPUT -m conntrack --ctstate NEW -j DNAT --to-destination 10.1.1.1:80',
      want: { unsupported: ['-m conntrack', '--ctstate NEW'], target: { kind: 'DNAT', to: '10.1.1.1:80' } },
    },
  ])('$line', ({ line, want }) => {
    expect(parseRule(line, 1)).toMatchObject(want);
  });
  it('keeps the source CIDR', () => {
    const r = parseRule('-A PROXY_INIT_REDIRECT -s 10.99.0.0/16 -j RETURN', 2);
    expect(formatCidr(r.source!.value)).toBe('10.99.0.0/16');
    expect(r.index).toBe(2);
  });
});

describe('parseNatTable', () => {
  it("reads proxy-init's golden restore payload (Linkerd's proxy-init arguments)", () => {
    const t = parseNatTable(LINKERD_ARGS_NAT);
    expect(t.warnings).toEqual([]);
    expect(t.chains.get('PREROUTING')?.rules.map((r) => r.comment)).toEqual([
      'proxy-init/install-proxy-init-prerouting',
    ]);
    expect(t.chains.get('PROXY_INIT_REDIRECT')?.rules.map((r) => r.comment)).toEqual([
      'proxy-init/ignore-port-4190,4191,4567,4568',
      'proxy-init/redirect-all-incoming-to-proxy-port',
    ]);
    expect(t.chains.get('PROXY_INIT_OUTPUT')?.rules.map((r) => [r.index, r.comment])).toEqual([
      [1, 'proxy-init/ignore-proxy-user-id'],
      [2, 'proxy-init/ignore-loopback'],
      [3, 'proxy-init/ignore-port-443,6443'],
      [4, 'proxy-init/redirect-all-outgoing-to-proxy-port'],
    ]);
    expect(t.chains.get('OUTPUT')?.builtin).toBe(true);
    expect(t.chains.get('PROXY_INIT_OUTPUT')?.builtin).toBe(false);
  });
  it('reads a live iptables-save: only the nat table, policies, counters ignored', () => {
    const t = parseNatTable(LIVE_SAVE);
    expect(t.warnings).toEqual([]);
    expect([...t.chains.keys()].sort()).toEqual([
      'INPUT',
      'OUTPUT',
      'POSTROUTING',
      'PREROUTING',
      'PROXY_INIT_OUTPUT',
      'PROXY_INIT_REDIRECT',
    ]);
    expect(t.chains.get('INPUT')?.rules).toEqual([]); // the filter table's INPUT rule is not nat
    expect(t.chains.get('PROXY_INIT_REDIRECT')?.rules).toHaveLength(3);
  });
  it('takes `iptables -S`-style text without table headers as nat, and reports junk lines', () => {
    const t = parseNatTable('-P OUTPUT DROP\n-N MY\n-A OUTPUT -j MY\nwhat is this\n');
    expect(t.chains.get('OUTPUT')?.policy).toBe('DROP');
    expect(t.chains.get('MY')?.rules).toEqual([]);
    expect(t.warnings).toEqual(['unrecognised line: what is this']);
  });
});
