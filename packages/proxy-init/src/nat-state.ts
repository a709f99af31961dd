// What `iptables-save -t nat` says is there already: which of our chains exist and which jumps to
// them the hook chains hold, read with the nat table model (nat-table.ts), so a re-run can decide
// what to create or skip.
import { parseNatTable } from './nat-table.js';
import { OUTPUT_CHAIN, REDIRECT_CHAIN } from './plan.js';

export interface NatState {
  /** User-defined chains present in the nat table. */
  chains: Set<string>;
  /** Every rule line that jumps to one of our chains, keyed by that chain, exactly as saved. */
  jumps: Map<string, string[]>;
  /** All rule lines ("-A ..."), chain by chain. */
  rules: string[];
}

const OURS = new Set([REDIRECT_CHAIN, OUTPUT_CHAIN]);
const HOOKS = new Set(['PREROUTING', 'OUTPUT']);

export function parseNatSave(text: string): NatState {
  const table = parseNatTable(text);
  const chains = new Set<string>();
  const jumps = new Map<string, string[]>();
  const rules: string[] = [];
  for (const chain of table.chains.values()) {
    if (!chain.builtin) chains.add(chain.name);
    for (const rule of chain.rules) {
      rules.push(rule.line);
      const to = rule.target.kind === 'jump' ? rule.target.chain : undefined;
      if (to !== undefined && OURS.has(to) && HOOKS.has(chain.name))
        jumps.set(to, [...(jumps.get(to) ?? []), rule.line]);
    }
  }
  return { chains, jumps, rules };
}
