// Issue 17: proxy-init's flags come from the pod spec the injector wrote (or a user's). Property
// (fast-check): any argv made of proxy-init's flags with hostile values is either a command whose
// every port and uid is in range, or refused with UsageError / ConfigError (both exit 2); nothing
// else is thrown, and Linkerd's proxy-init arguments always parse.
import fc from 'fast-check';
import { ConfigError } from '@minimesh/config';
import { parseFlags, UsageError } from '@minimesh/runtime';
import { describe, expect, it } from 'vitest';
import { FLAGS, normalizeArgv, parseCommand, PROGRAM } from './options.js';

const flagNames = Object.keys(FLAGS).map((k) => `--${k}`);
const value = fc.oneof(
  fc.constantFrom('0', '1', '4143', '65535', '65536', '-1', '1-99999', '22;rm -rf /', '', '443,6443', '10.0.0.0/8'),
  fc.constantFrom('4294967295', 'true', 'false', 'nft', 'legacy', '::/129', '1:2', ' ', '$(id)'),
  fc.string({ maxLength: 16 }),
  fc.integer({ min: -70000, max: 70000 }).map(String),
);
const argv = fc.array(
  fc.oneof(
    fc.tuple(fc.constantFrom(...flagNames), value).map(([f, v]) => [f, v]),
    fc.tuple(fc.constantFrom(...flagNames), value).map(([f, v]) => [`${f}=${v}`]),
    fc.constantFrom(['--bogus'], ['-x'], ['positional']),
  ),
  { maxLength: 8 },
);

describe('proxy-init flags (property)', () => {
  it('any argv is a valid command or a UsageError/ConfigError', () => {
    let ok = 0;
    fc.assert(
      fc.property(argv, (parts) => {
        const args = parts.flat();
        try {
          const parsed = parseFlags(PROGRAM, FLAGS, normalizeArgv(args));
          if ('help' in parsed) return;
          const cmd = parseCommand(parsed.values);
          ok += 1;
          const o = cmd.options;
          for (const p of [o.incomingProxyPort, o.outgoingProxyPort, ...o.portsToRedirect])
            expect(p >= 1 && p <= 65535, `port ${p}`).toBe(true);
          for (const r of [...o.inboundPortsToIgnore, ...o.outboundPortsToIgnore])
            expect(r.lo >= 1 && r.lo <= r.hi && r.hi <= 65535, `range ${r.lo}-${r.hi}`).toBe(true);
          if (o.proxyUid !== undefined) expect(Number.isInteger(o.proxyUid) && o.proxyUid >= 0).toBe(true);
        } catch (err) {
          expect(err instanceof UsageError || err instanceof ConfigError, String(err)).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
    expect(ok).toBeGreaterThan(0);
  });
});
