// Issue 17: proxy-init reads `iptables-save` text (what is already in the pod's nat table, possibly
// written by other tools) before it decides what to add. Properties (fast-check):
// - any text: parseNatTable and parseNatSave never throw; what they do not understand becomes a
//   warning, never a rule;
// - any plan proxy-init can make (random ports, uids, subnets): its restore payload parses back to
//   exactly the planned chains, rules, ports, uid and comments (render → parse round-trip).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseNatSave } from './nat-state.js';
import { NatParseError, parseNatTable, tokenize } from './nat-table.js';
import { expectedSaveLines, planFirewall, REDIRECT_CHAIN, OUTPUT_CHAIN, type ProxyInitOptions } from './plan.js';
import { renderApplyPayload } from './restore-payload.js';

const empty = { chains: new Set<string>(), jumps: new Map<string, string[]>(), rules: [] };

// Lines shaped like iptables-save output, with hostile bits mixed in.
const word = fc.oneof(
  fc.constantFrom('-A', '-N', '-P', '-p', 'tcp', '-m', 'multiport', '--dports', '--dport', 'comment', '--comment'),
  fc.constantFrom('-j', 'REDIRECT', '--to-ports', 'RETURN', 'owner', '--uid-owner', '!', '-s', '-d', '-o', 'lo'),
  fc.constantFrom('PREROUTING', 'OUTPUT', REDIRECT_CHAIN, '"', '\\', '"a b"', '0:65535', '99999', '1:0', '::/129'),
  fc.string({ maxLength: 12 }),
  fc.integer({ min: -5, max: 70000 }).map(String),
);
const line = fc.oneof(
  fc.array(word, { maxLength: 12 }).map((ws) => ws.join(' ')),
  fc.constantFrom('*nat', '*filter', 'COMMIT', ':PREROUTING ACCEPT [0:0]', `:${REDIRECT_CHAIN} - [0:0]`, '# comment'),
  fc.string({ maxLength: 60 }),
);
const saveText = fc.array(line, { maxLength: 30 }).map((ls) => ls.join('\n'));

describe('iptables-save parser (property)', () => {
  it('never throws on any text; rules it keeps are "-A" lines of the nat table', () => {
    fc.assert(
      fc.property(saveText, (text) => {
        const table = parseNatTable(text);
        const state = parseNatSave(text);
        for (const chain of table.chains.values())
          for (const rule of chain.rules) {
            expect(rule.line.startsWith('-A ')).toBe(true);
            expect(rule.chain).toBe(chain.name);
          }
        expect(state.rules.every((r) => r.startsWith('-A '))).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it('tokenize either splits a line or refuses it with NatParseError (unterminated quote)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => {
        try {
          const words = tokenize(text);
          for (const w of words) expect(typeof w).toBe('string');
        } catch (err) {
          expect(err).toBeInstanceOf(NatParseError);
          expect((err as Error).message).toMatch(/^unterminated quote/);
        }
      }),
      { numRuns: 3000 },
    );
  });

  const port = fc.integer({ min: 1, max: 65535 });
  const range = fc.tuple(port, port).map(([a, b]) => ({ lo: Math.min(a, b), hi: Math.max(a, b) }));
  const options: fc.Arbitrary<ProxyInitOptions> = fc.record({
    incomingProxyPort: port,
    outgoingProxyPort: port,
    proxyUid: fc.option(fc.integer({ min: 1, max: 2147483647 }), { nil: undefined }),
    proxyGid: fc.option(fc.integer({ min: 1, max: 2147483647 }), { nil: undefined }),
    inboundPortsToIgnore: fc.array(range, { maxLength: 20 }).map(fold),
    outboundPortsToIgnore: fc.array(range, { maxLength: 20 }).map(fold),
    portsToRedirect: fc.uniqueArray(port, { maxLength: 5 }),
    subnetsToIgnore: fc.array(
      fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })).map(([address, prefix]) => ({
        address: networkOf(address, prefix),
        prefix,
        family: 4 as const,
      })),
      { maxLength: 3 },
    ),
    ipv6: fc.boolean(),
  }) as fc.Arbitrary<ProxyInitOptions>;

  it("any plan's restore payload parses back to exactly the planned rules", () => {
    fc.assert(
      fc.property(options, (opts) => {
        for (const plan of planFirewall(opts).families) {
          const payload = renderApplyPayload(plan, empty);
          const table = parseNatTable(payload);
          expect(table.warnings).toEqual([]);
          const expected = expectedSaveLines(plan);
          for (const [chain, lines] of expected) {
            expect(table.chains.get(chain)?.rules.map((r) => r.line)).toEqual(lines);
          }
          // The parsed model carries the planned numbers, not just the text.
          const out = table.chains.get(OUTPUT_CHAIN)?.rules ?? [];
          const redirect = out.at(-1)?.target;
          expect(redirect).toEqual({
            kind: 'REDIRECT',
            toPorts: { lo: opts.outgoingProxyPort, hi: opts.outgoingProxyPort },
          });
          if (opts.proxyUid !== undefined)
            expect(out.some((r) => r.uidOwner?.value.lo === opts.proxyUid && r.target.kind === 'RETURN')).toBe(true);
          const ignored = out.flatMap((r) => (r.target.kind === 'RETURN' ? (r.dports?.value ?? []) : []));
          expect(fold(ignored)).toEqual(opts.outboundPortsToIgnore);
          for (const r of [...out, ...(table.chains.get(REDIRECT_CHAIN)?.rules ?? [])])
            expect(r.comment).toMatch(/^proxy-init\//);
          // And reading it back as "what is there" finds our chains and both jumps.
          const state = parseNatSave(payload);
          expect([...state.chains].sort()).toEqual([OUTPUT_CHAIN, REDIRECT_CHAIN]);
          expect(state.jumps.get(REDIRECT_CHAIN)).toHaveLength(1);
          expect(state.jumps.get(OUTPUT_CHAIN)).toHaveLength(1);
        }
      }),
      { numRuns: 500 },
    );
  });
});

function fold(ranges: { lo: number; hi: number }[]): { lo: number; hi: number }[] {
  const sorted = [...ranges].sort((a, b) => a.lo - b.lo);
  const out: { lo: number; hi: number }[] = [];
  for (const r of sorted) {
    const last = out.at(-1);
    if (last && r.lo <= last.hi + 1) last.hi = Math.max(last.hi, r.hi);
    else out.push({ ...r });
  }
  return out;
}

function networkOf(address: string, prefix: number): string {
  const n = address.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const net = (n & mask) >>> 0;
  return [24, 16, 8, 0].map((s) => (net >>> s) & 255).join('.');
}
