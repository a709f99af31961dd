// The nat table model: `iptables-save -t nat` (legacy or nft, or proxy-init's restore payload) parsed
// into chains and rules. Pure text in, data out. proxy-init reads what is there already with it
// (nat-state.ts); `minimesh explain` walks a connection through it (the CLI's packet-walk.ts).
// Only the matches and targets proxy-init emits are modelled; anything else is kept verbatim in
// `unsupported`, so the walk can say it could not judge that rule instead of guessing silently.
import { ConfigError, parseCidr, type Cidr, type PortRange } from '@minimesh/config';

/** A match with an optional `!` in front of it. */
export interface Negatable<T> {
  value: T;
  negated: boolean;
}

export type NatTarget =
  | { kind: 'jump'; chain: string }
  | { kind: 'RETURN' }
  | { kind: 'ACCEPT' }
  | { kind: 'REDIRECT'; toPorts?: PortRange }
  | { kind: 'DNAT'; to: string }
  | { kind: 'other'; name: string; args: string[] }
  | { kind: 'none' };

export interface NatRule {
  chain: string;
  /** 1-based position in its chain, as `iptables -t nat -L <chain> --line-numbers` numbers it. */
  index: number;
  /** The saved line, exactly. */
  line: string;
  protocol?: Negatable<string>;
  source?: Negatable<Cidr>;
  destination?: Negatable<Cidr>;
  inInterface?: Negatable<string>;
  outInterface?: Negatable<string>;
  /** `--dport N` or `--dport lo:hi` (from -m tcp/udp). */
  dport?: Negatable<PortRange>;
  /** `-m multiport --dports a,b,lo:hi`. */
  dports?: Negatable<PortRange[]>;
  uidOwner?: Negatable<PortRange>;
  gidOwner?: Negatable<PortRange>;
  comment?: string;
  target: NatTarget;
  /** Options this model does not evaluate (the walk reports them). */
  unsupported: string[];
}

export interface NatChain {
  name: string;
  builtin: boolean;
  /** Policy of a built-in chain (ACCEPT unless saved otherwise); undefined for user chains. */
  policy?: string;
  rules: NatRule[];
}

export interface NatTable {
  chains: Map<string, NatChain>;
  /** Lines that were not understood at all (reported, never fatal). */
  warnings: string[];
}

export const BUILTIN_NAT_CHAINS = ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'] as const;

export class NatParseError extends Error {
  readonly code = 'MINIMESH_PROXY_INIT_NAT_PARSE';
}

/** Splits a saved rule into words, honouring double quotes and backslash escapes (comments). */
export function tokenize(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quoted) {
      if (c === '\\' && i + 1 < line.length) {
        cur += line[++i];
      } else if (c === '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c === '"') {
      quoted = true;
      inWord = true;
    } else if (c === ' ' || c === '\t') {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (quoted) throw new NatParseError(`unterminated quote in: ${line}`);
  if (inWord) out.push(cur);
  return out;
}

/** "80", "1000:2000" (iptables) or "1000-2000" (proxy-init flags) → range. */
export function parsePortRange(text: string): PortRange {
  const m = /^(\d+)(?:[:-](\d+))?$/.exec(text);
  if (!m) throw new NatParseError(`"${text}" is not a port or port range`);
  const lo = Number(m[1]);
  const hi = m[2] === undefined ? lo : Number(m[2]);
  if (lo > 65535 || hi > 65535 || hi < lo) throw new NatParseError(`"${text}" is not a port range within 0-65535`);
  return { lo, hi };
}

function parseIdRange(text: string): PortRange {
  const m = /^(\d+)(?:-(\d+))?$/.exec(text);
  if (!m) throw new NatParseError(`"${text}" is not a numeric id or id range`);
  const lo = Number(m[1]);
  return { lo, hi: m[2] === undefined ? lo : Number(m[2]) };
}

/** A rule's -s/-d operand ("10.0.0.0/8", "10.0.0.7", "10.0.0.0/255.0.0.0", "fd00::/8"). */
export function parseCidrText(text: string): Cidr {
  try {
    return parseCidr('address', text);
  } catch (err) {
    if (err instanceof ConfigError) throw new NatParseError(`"${text}" is not an address or CIDR`, { cause: err });
    throw err;
  }
}

function parseTarget(words: string[], rule: NatRule): void {
  const [name, ...args] = words;
  if (name === undefined) return;
  if (name === 'RETURN' || name === 'ACCEPT') {
    rule.target = { kind: name };
  } else if (name === 'REDIRECT') {
    const i = args.indexOf('--to-ports');
    const ports = i >= 0 ? args[i + 1] : undefined;
    rule.target = ports === undefined ? { kind: 'REDIRECT' } : { kind: 'REDIRECT', toPorts: parsePortRange(ports) };
  } else if (name === 'DNAT') {
    const i = args.indexOf('--to-destination');
    rule.target = { kind: 'DNAT', to: args[i + 1] ?? '' };
  } else if (
    /^[A-Z]+$/.test(name) &&
    ['MASQUERADE', 'SNAT', 'MARK', 'LOG', 'DROP', 'REJECT', 'CONNMARK', 'TPROXY'].includes(name)
  ) {
    rule.target = { kind: 'other', name, args };
  } else {
    rule.target = { kind: 'jump', chain: name };
  }
}

/** One `-A CHAIN ...` line (the chain name and position are supplied by the caller). */
export function parseRule(line: string, index: number): NatRule {
  const words = tokenize(line);
  if (words[0] !== '-A' || words[1] === undefined) throw new NatParseError(`not a rule line: ${line}`);
  const rule: NatRule = { chain: words[1], index, line, target: { kind: 'none' }, unsupported: [] };
  let negate = false;
  let i = 2;
  const next = (opt: string): string => {
    const v = words[++i];
    if (v === undefined) throw new NatParseError(`${opt} without a value in: ${line}`);
    return v;
  };
  const n = <T>(value: T): Negatable<T> => {
    const r = { value, negated: negate };
    negate = false;
    return r;
  };
  for (; i < words.length; i++) {
    const w = words[i] as string;
    switch (w) {
      case '!':
        negate = true;
        break;
      case '-p':
      case '--protocol':
        rule.protocol = n(next(w).toLowerCase());
        break;
      case '-s':
      case '--source':
        rule.source = n(parseCidrText(next(w)));
        break;
      case '-d':
      case '--destination':
        rule.destination = n(parseCidrText(next(w)));
        break;
      case '-i':
      case '--in-interface':
        rule.inInterface = n(next(w));
        break;
      case '-o':
      case '--out-interface':
        rule.outInterface = n(next(w));
        break;
      case '-m': {
        const mod = next(w);
        if (!['tcp', 'udp', 'multiport', 'owner', 'comment'].includes(mod)) rule.unsupported.push(`-m ${mod}`);
        break;
      }
      case '--dport':
      case '--destination-port':
        rule.dport = n(parsePortRange(next(w)));
        break;
      case '--dports':
      case '--destination-ports':
        rule.dports = n(next(w).split(',').map(parsePortRange));
        break;
      case '--uid-owner':
        rule.uidOwner = n(parseIdRange(next(w)));
        break;
      case '--gid-owner':
        rule.gidOwner = n(parseIdRange(next(w)));
        break;
      case '--comment':
        rule.comment = next(w);
        break;
      case '-j':
      case '--jump':
      case '-g':
      case '--goto': {
        if (w === '-g' || w === '--goto') rule.unsupported.push('--goto');
        parseTarget(words.slice(i + 1), rule);
        i = words.length;
        break;
      }
      default: {
        // An option this model does not know, with its value(s) up to the next option.
        const parts = [w];
        while (words[i + 1] !== undefined && !(words[i + 1] as string).startsWith('-') && words[i + 1] !== '!')
          parts.push(words[++i] as string);
        rule.unsupported.push(parts.join(' '));
        negate = false;
      }
    }
  }
  return rule;
}

/** The nat table of `iptables-save` text (other tables in the text are ignored). */
export function parseNatTable(text: string): NatTable {
  const chains = new Map<string, NatChain>();
  const warnings: string[] = [];
  const chain = (name: string): NatChain => {
    let c = chains.get(name);
    if (!c) {
      const builtin = (BUILTIN_NAT_CHAINS as readonly string[]).includes(name);
      c = { name, builtin, ...(builtin ? { policy: 'ACCEPT' } : {}), rules: [] };
      chains.set(name, c);
    }
    return c;
  };
  // A file that holds rules but no "*nat" header (e.g. pasted from `iptables -S`) is taken as nat.
  const hasTables = /^\*/m.test(text);
  let inNat = !hasTables;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) {
      inNat = line === '*nat';
      continue;
    }
    if (!inNat) continue;
    if (line === 'COMMIT') {
      if (hasTables) inNat = false;
      continue;
    }
    if (line.startsWith(':')) {
      const m = /^:(\S+)\s+(\S+)/.exec(line);
      if (!m) {
        warnings.push(`unrecognised chain line: ${line}`);
        continue;
      }
      const c = chain(m[1] as string);
      if (c.builtin && m[2] !== '-') c.policy = m[2] as string;
      continue;
    }
    if (line.startsWith('-N ')) {
      chain(line.slice(3).trim());
      continue;
    }
    if (line.startsWith('-P ')) {
      const [, name, policy] = line.split(/\s+/);
      if (name && policy) chain(name).policy = policy;
      continue;
    }
    if (line.startsWith('-A ')) {
      try {
        // The chain name as parseRule reads it (tokenized: a quoted word is one name), so a rule is
        // filed under the chain it names.
        const name = tokenize(line)[1];
        if (name === undefined) throw new NatParseError(`not a rule line: ${line}`);
        const c = chain(name);
        c.rules.push(parseRule(line, c.rules.length + 1));
      } catch (err) {
        warnings.push((err as Error).message);
      }
      continue;
    }
    warnings.push(`unrecognised line: ${line}`);
  }
  for (const name of BUILTIN_NAT_CHAINS) chain(name);
  return { chains, warnings };
}
