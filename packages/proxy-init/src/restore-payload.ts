// iptables-restore --noflush payloads: one transaction per table and family, so the kernel sees
// all of it or none of it.
//   apply:   declaring `:CHAIN - [0:0]` creates a chain, or flushes it when it exists (both backends,
//            under --noflush), so a re-run rebuilds our chains in place; a jump is appended only when
//            the hook chain has none yet, so re-runs never duplicate it.
//   cleanup: deletes the jumps exactly as iptables-save printed them, then flushes and deletes our chains.
import type { NatState } from './nat-state.js';
import { jumpRule, ruleArgs, type FamilyPlan } from './plan.js';

export function renderApplyPayload(plan: FamilyPlan, state: NatState): string {
  const lines = [`*${plan.table}`];
  for (const chain of plan.chains) lines.push(`:${chain.name} - [0:0]`);
  for (const chain of plan.chains) {
    for (const rule of chain.rules) lines.push(['-A', chain.name, ...ruleArgs(rule)].join(' '));
    if ((state.jumps.get(chain.name) ?? []).length === 0)
      lines.push(['-A', chain.hook, ...ruleArgs(jumpRule(chain))].join(' '));
  }
  lines.push('COMMIT', '');
  return lines.join('\n');
}

/** Undefined when there is nothing of ours to remove. */
export function renderCleanupPayload(plan: FamilyPlan, state: NatState): string | undefined {
  const lines = [`*${plan.table}`];
  for (const chain of plan.chains) {
    for (const jump of state.jumps.get(chain.name) ?? []) lines.push(jump.replace(/^-A /, '-D '));
  }
  for (const chain of plan.chains) {
    if (state.chains.has(chain.name)) lines.push(`-F ${chain.name}`, `-X ${chain.name}`);
  }
  if (lines.length === 1) return undefined;
  lines.push('COMMIT', '');
  return lines.join('\n');
}
