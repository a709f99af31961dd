import { readFileSync, writeFileSync } from 'node:fs';
import { parseCidrList, parsePortRanges } from '@minimesh/config';
import { describe, expect, it } from 'vitest';
import { parseNatSave } from './nat-state.js';
import { expectedSaveLines, planFirewall } from './plan.js';
import { toMultiportGroups } from './port-groups.js';
import { renderApplyPayload } from './restore-payload.js';
import { LINKERD_NAT_CHAINS } from '@minimesh/test-support/linkerd';
import { LINKERD_OPTIONS } from './testdata/linkerd-args.js';

const golden = (name: string, actual: string): void => {
  const path = new URL(`./testdata/${name}`, import.meta.url);
  if (process.env.UPDATE_GOLDEN) writeFileSync(path, actual);
  expect(actual).toBe(readFileSync(path, 'utf8'));
};

describe('planFirewall', () => {
  it("renders Linkerd's proxy-init arguments as the golden restore payload", () => {
    const plan = planFirewall(LINKERD_OPTIONS);
    expect(plan.families.map((f) => f.family)).toEqual([4]);
    golden('linkerd-args-nat.restore', renderApplyPayload(plan.families[0]!, parseNatSave('')));
  });

  it("holds exactly Linkerd's chains, in order, with Linkerd's comments", () => {
    const lines = expectedSaveLines(planFirewall(LINKERD_OPTIONS).families[0]!);
    expect(Object.fromEntries(lines)).toEqual(LINKERD_NAT_CHAINS);
  });

  it('renders ranges as lo:hi and folds duplicates', () => {
    const plan = planFirewall({
      ...LINKERD_OPTIONS,
      inboundPortsToIgnore: parsePortRanges('in', '4190,4190,8000-8010,8005-8020,22'),
    });
    const redirect = plan.families[0]!.chains[0]!;
    expect(redirect.rules[0]).toEqual({
      matches: ['-p', 'tcp', '-m', 'multiport', '--dports', '22,4190,8000:8020'],
      comment: 'ignore-port-22,4190,8000:8020',
      target: ['-j', 'RETURN'],
    });
  });

  it('splits ignore lists into multiport groups of at most 15 references (a range counts 2)', () => {
    const ports = Array.from({ length: 20 }, (_, i) => String(1000 + i * 10)).join(',');
    const plan = planFirewall({ ...LINKERD_OPTIONS, outboundPortsToIgnore: parsePortRanges('out', ports) });
    const out = plan.families[0]!.chains[1]!.rules.filter((r) => r.comment.startsWith('ignore-port-'));
    expect(out.map((r) => r.matches.at(-1)!.split(',').length)).toEqual([15, 5]);
    expect(out[1]!.comment).toBe('ignore-port-1150,1160,1170,1180,1190');
  });

  it('makes no rule for the proxy gid unless asked, and one after the uid rule when asked', () => {
    expect(planFirewall(LINKERD_OPTIONS).families[0]!.chains[1]!.rules.map((r) => r.comment)).not.toContain(
      'ignore-proxy-group-id',
    );
    const rules = planFirewall({ ...LINKERD_OPTIONS, proxyGid: 2103 }).families[0]!.chains[1]!.rules;
    expect(rules.slice(0, 3).map((r) => r.comment)).toEqual([
      'ignore-proxy-user-id',
      'ignore-proxy-group-id',
      'ignore-loopback',
    ]);
    expect(rules[1]!.matches).toEqual(['-m', 'owner', '--gid-owner', '2103']);
  });

  it('makes no uid rule when no proxy uid is given', () => {
    const rules = planFirewall({ ...LINKERD_OPTIONS, proxyUid: undefined }).families[0]!.chains[1]!.rules;
    expect(rules[0]!.comment).toBe('ignore-loopback');
  });

  it('ignores subnets by source, inbound only, each in its own family, in network form', () => {
    const plan = planFirewall({
      ...LINKERD_OPTIONS,
      ipv6: true,
      subnetsToIgnore: parseCidrList('s', '10.1.2.3/8,192.168.0.0/16,FD00:0:0::7/16'),
    });
    const [v4, v6] = plan.families;
    const subnetRules = (f: typeof v4) => f!.chains[0]!.rules.filter((r) => r.comment.startsWith('ignore-subnet-'));
    expect(subnetRules(v4).map((r) => r.matches)).toEqual([
      ['-s', '10.0.0.0/8'],
      ['-s', '192.168.0.0/16'],
    ]);
    expect(subnetRules(v4).map((r) => r.comment)).toEqual(['ignore-subnet-10.0.0.0/8', 'ignore-subnet-192.168.0.0/16']);
    expect(subnetRules(v6).map((r) => r.comment)).toEqual(['ignore-subnet-fd00::/16']);
    expect(plan.families[0]!.chains[1]!.rules.some((r) => r.matches.includes('-s'))).toBe(false);
    // ignore ports first, then subnets, then the redirect
    expect(v4!.chains[0]!.rules.map((r) => r.comment)).toEqual([
      'ignore-port-4190,4191,4567,4568',
      'ignore-subnet-10.0.0.0/8',
      'ignore-subnet-192.168.0.0/16',
      'redirect-all-incoming-to-proxy-port',
    ]);
  });

  it('plans IPv6 as a second family with the same chains', () => {
    const plan = planFirewall({ ...LINKERD_OPTIONS, ipv6: true });
    expect(plan.families.map((f) => f.family)).toEqual([4, 6]);
    expect(plan.families[1]!.chains).toEqual(plan.families[0]!.chains);
  });

  it('redirects only the listed ports when --ports-to-redirect is given', () => {
    const rules = planFirewall({ ...LINKERD_OPTIONS, portsToRedirect: [80, 8080] }).families[0]!.chains[0]!.rules;
    expect(rules.slice(1)).toEqual([
      {
        matches: ['-p', 'tcp', '-m', 'tcp', '--dport', '80'],
        comment: 'redirect-port-80-to-proxy-port',
        target: ['-j', 'REDIRECT', '--to-ports', '4143'],
      },
      {
        matches: ['-p', 'tcp', '-m', 'tcp', '--dport', '8080'],
        comment: 'redirect-port-8080-to-proxy-port',
        target: ['-j', 'REDIRECT', '--to-ports', '4143'],
      },
    ]);
  });

  it('makes no ignore-port rule for empty lists', () => {
    const plan = planFirewall({ ...LINKERD_OPTIONS, inboundPortsToIgnore: [], outboundPortsToIgnore: [] });
    expect(plan.families[0]!.chains.flatMap((c) => c.rules.map((r) => r.comment))).toEqual([
      'redirect-all-incoming-to-proxy-port',
      'ignore-proxy-user-id',
      'ignore-loopback',
      'redirect-all-outgoing-to-proxy-port',
    ]);
  });
});

describe('toMultiportGroups', () => {
  const singles = (n: number, from = 100) => Array.from({ length: n }, (_, i) => ({ lo: from + i, hi: from + i }));
  const ranges = (n: number) => Array.from({ length: n }, (_, i) => ({ lo: 1000 + i * 10, hi: 1005 + i * 10 }));
  it.each([
    ['15 single ports fit one group', singles(15), [15]],
    ['16 single ports make 15 + 1', singles(16), [15, 1]],
    ['7 ranges + 1 port are exactly 15 references', [...ranges(7), ...singles(1, 5000)], [8]],
    ['8 ranges (16 references) split 7 + 1', ranges(8), [7, 1]],
    ['7 ranges + 2 ports split before the port that would make 16', [...ranges(7), ...singles(2, 5000)], [8, 1]],
  ])('%s', (_name, list, sizes) => {
    expect(toMultiportGroups(list).map((g) => g.length)).toEqual(sizes);
  });

  it('never exceeds 15 references per group', () => {
    const ranges = parsePortRanges(
      'p',
      '1,2,3-4,10-20,30,40-41,50,60-70,80,90-95,100,110-120,130,140-150,160,170-180,190',
    );
    for (const group of toMultiportGroups(ranges)) {
      expect(group.reduce((n, e) => n + (e.includes(':') ? 2 : 1), 0)).toBeLessThanOrEqual(15);
    }
    expect(toMultiportGroups(ranges).flat().join(',')).toBe(
      '1,2,3:4,10:20,30,40:41,50,60:70,80,90:95,100,110:120,130,140:150,160,170:180,190',
    );
  });
});
