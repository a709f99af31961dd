// What `iptables-save -t nat` says is there already: which of our chains exist and which jumps to
// them the hook chains hold. Pure text parsing, so a re-run can decide what to create or skip.
import { OUTPUT_CHAIN, REDIRECT_CHAIN } from './plan.js';

export interface NatState {
  /** User-defined chains present in the nat table. */
  chains: Set<string>;
  /** Every rule line that jumps to one of our chains, keyed by that chain, exactly as saved. */
  jumps: Map<string, string[]>;
  /** All rule lines ("-A ..."), in order. */
  rules: string[];
}

const OURS = [REDIRECT_CHAIN, OUTPUT_CHAIN];

export function parseNatSave(text: string): NatState {
  const chains = new Set<string>();
  const jumps = new Map<string, string[]>();
  const rules: string[] = [];
  let inNat = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('*')) inNat = line === '*nat';
    if (!inNat || line === '' || line.startsWith('#')) continue;
    const chain = /^:(\S+) /.exec(line);
    if (chain) chains.add(chain[1] as string);
    if (!line.startsWith('-A ')) continue;
    rules.push(line);
    for (const ours of OURS) {
      if (new RegExp(`^-A (PREROUTING|OUTPUT) (.+ )?-j ${ours}( |$)`).test(line))
        jumps.set(ours, [...(jumps.get(ours) ?? []), line]);
    }
  }
  for (const builtin of ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING']) chains.delete(builtin);
  return { chains, jumps, rules };
}
