// Whether a network namespace holds exactly the planned rules: our two chains rule for rule, and one
// jump to each from its hook chain. Pure diff (diffNatRules) plus a thin read (verifyRules), for a
// CNI CHECK or anyone who wants to know that the rules a pod started with are still there.
import type { Logger } from '@minimesh/runtime';
import type { CommandRunner } from './command-runner.js';
import { ProxyInitError } from './errors.js';
import { parseNatSave } from './nat-state.js';
import { expectedSaveLines, type FamilyPlan } from './plan.js';
import type { RuleCommand } from './options.js';
import { binariesFor } from './write-rules.js';

/** One line per difference between `iptables-save -t nat` and the plan; empty when they agree. */
export function diffNatRules(plan: FamilyPlan, saved: string): string[] {
  const state = parseNatSave(saved);
  const problems: string[] = [];
  const v = `IPv${plan.family}`;
  for (const chain of plan.chains) {
    const expected = expectedSaveLines(plan);
    if (!state.chains.has(chain.name)) {
      problems.push(`${v}: chain ${chain.name} is missing`);
    } else {
      const want = expected.get(chain.name) ?? [];
      const have = state.rules.filter((l) => l.startsWith(`-A ${chain.name} `));
      if (want.join('\n') !== have.join('\n')) {
        const missing = want.filter((l) => !have.includes(l));
        const extra = have.filter((l) => !want.includes(l));
        const what = [
          ...missing.map((l) => `missing \`${l}\``),
          ...extra.map((l) => `unexpected \`${l}\``),
          ...(missing.length + extra.length === 0 ? ['the rules are out of order'] : []),
        ];
        problems.push(`${v}: chain ${chain.name}: ${what.join('; ')}`);
      }
    }
    const jumps = state.jumps.get(chain.name) ?? [];
    if (jumps.length !== 1)
      problems.push(`${v}: ${chain.hook} has ${jumps.length} jumps to ${chain.name}, expected exactly one`);
  }
  return problems;
}

export interface VerifyRulesOptions {
  rules: RuleCommand;
  runner: CommandRunner;
  logger: Logger;
  lookup?: (name: string) => string | undefined;
}

/** Reads each family's nat table (read-only) and diffs it against the plan. */
export async function verifyRules(opts: VerifyRulesOptions): Promise<{ problems: string[]; saved: string[] }> {
  const { plan, binaries } = binariesFor(opts.rules, opts.logger, opts.lookup);
  const problems: string[] = [];
  const saved: string[] = [];
  for (const family of plan.families) {
    const b = binaries.byFamily.get(family.family);
    if (!b) throw new ProxyInitError('MINIMESH_PROXY_INIT_MISSING_BINARY', `IPv${family.family}: no iptables binaries`);
    const argv = [b.save, '-t', 'nat'];
    const res = await opts.runner.run(argv);
    if (res.code !== 0)
      throw new ProxyInitError(
        'MINIMESH_PROXY_INIT_COMMAND_FAILED',
        `IPv${family.family}: reading the nat table: \`${opts.runner.describe(argv).join(' ')}\` exited with ${res.code}: ${res.stderr.trim() || 'no output'}`,
      );
    saved.push(res.stdout);
    problems.push(...diffNatRules(family, res.stdout));
  }
  return { problems, saved };
}
