// Walks one new TCP connection through a parsed nat table, rule by rule, the way netfilter does for
// the first packet of a connection: inbound packets enter at PREROUTING, locally generated ones at
// OUTPUT. Pure: table and packet in, the path of rules (each with why it did or did not match) and
// the verdict out.
import { cidrContains, formatCidr, type PortRange } from '@minimesh/config';
import type { NatRule, NatTable, Negatable } from '@minimesh/proxy-init';

export interface Packet {
  direction: 'inbound' | 'outbound';
  protocol: 'tcp';
  /** Destination port. */
  dport: number;
  /** Destination IP, when known (a name given with --to has none until resolved). */
  destination?: string;
  /** Source IP, when known. */
  source?: string;
  /** Outbound: the uid and gid of the sending process. */
  uid?: number;
  gid?: number;
  /** Outbound: the interface the route picks (lo for loopback and the pod's own addresses). */
  outInterface?: string;
  /** Inbound: the interface the packet arrives on. */
  inInterface?: string;
}

export type Tri = 'yes' | 'no' | 'unknown';

export interface WalkStep {
  chain: string;
  /** 1-based rule position in the chain. */
  index: number;
  comment?: string;
  line: string;
  result: Tri;
  /** Why, one phrase per criterion (the deciding one first when it did not match). */
  reasons: string[];
  /** What the rule does when it matches, in words ("jumps to PROXY_INIT_OUTPUT", "REDIRECT to port 4140"). */
  action: string;
  /** Options in the rule this model does not evaluate. */
  unsupported: string[];
}

export type Verdict =
  | { kind: 'redirect'; port: number; step: WalkStep }
  | { kind: 'dnat'; to: string; step: WalkStep }
  | { kind: 'accept'; chain: string; how: 'policy' | 'accept-rule' | 'return-from-builtin'; step?: WalkStep }
  | { kind: 'other'; target: string; step: WalkStep }
  | { kind: 'loop'; chain: string };

export interface Walk {
  hook: 'PREROUTING' | 'OUTPUT';
  steps: WalkStep[];
  /** Chains entered, in order, with how we got there. */
  verdict: Verdict;
  /** True when some rule could not be judged (missing packet facts or unsupported matches). */
  uncertain: boolean;
}

const MAX_DEPTH = 16;
const MAX_STEPS = 10_000;

function fmtRange(r: PortRange): string {
  return r.lo === r.hi ? String(r.lo) : `${r.lo}:${r.hi}`;
}

function inRange(r: PortRange, v: number): boolean {
  return v >= r.lo && v <= r.hi;
}

/** A criterion result; `neg` flips yes/no for `!` matches. */
function crit(
  n: Negatable<unknown> | undefined,
  base: Tri,
  yes: string,
  no: string,
): { result: Tri; reason: string } | undefined {
  if (!n) return undefined;
  let result = base;
  if (n.negated && base !== 'unknown') result = base === 'yes' ? 'no' : 'yes';
  let reason: string;
  if (base === 'unknown') reason = n.negated ? `${yes}; the rule negates it with "!"` : yes;
  else if (!n.negated) reason = base === 'yes' ? yes : no;
  else
    reason =
      base === 'yes'
        ? `${yes}, but the rule negates this with "!", so it does not match`
        : `${no}, and the rule negates this with "!", so it matches`;
  return { result, reason };
}

/** Does `rule` match `packet`? Each criterion in words. */
export function matchRule(
  rule: NatRule,
  packet: Packet,
  hook: 'PREROUTING' | 'OUTPUT',
): { result: Tri; reasons: string[] } {
  const parts: { result: Tri; reason: string }[] = [];
  const add = (c: { result: Tri; reason: string } | undefined): void => {
    if (c) parts.push(c);
  };
  if (rule.protocol) {
    const p = rule.protocol.value;
    const base: Tri = p === 'all' || p === packet.protocol ? 'yes' : 'no';
    add(crit(rule.protocol, base, `protocol ${packet.protocol} is ${p}`, `protocol ${packet.protocol} is not ${p}`));
  }
  if (rule.uidOwner) {
    const r = rule.uidOwner.value;
    if (hook !== 'OUTPUT') {
      parts.push({ result: 'no', reason: 'owner matches apply only to locally generated packets' });
    } else if (packet.uid === undefined) {
      add(crit(rule.uidOwner, 'unknown', `the sender's uid is unknown (the rule wants uid ${fmtRange(r)})`, ''));
    } else {
      add(
        crit(
          rule.uidOwner,
          inRange(r, packet.uid) ? 'yes' : 'no',
          `uid ${packet.uid} is the owner uid ${fmtRange(r)}`,
          `uid ${packet.uid} is not uid ${fmtRange(r)}`,
        ),
      );
    }
  }
  if (rule.gidOwner) {
    const r = rule.gidOwner.value;
    if (hook !== 'OUTPUT') {
      parts.push({ result: 'no', reason: 'owner matches apply only to locally generated packets' });
    } else if (packet.gid === undefined) {
      add(crit(rule.gidOwner, 'unknown', `the sender's gid is unknown (the rule wants gid ${fmtRange(r)})`, ''));
    } else {
      add(
        crit(
          rule.gidOwner,
          inRange(r, packet.gid) ? 'yes' : 'no',
          `gid ${packet.gid} is the owner gid ${fmtRange(r)}`,
          `gid ${packet.gid} is not gid ${fmtRange(r)}`,
        ),
      );
    }
  }
  if (rule.outInterface) {
    const want = rule.outInterface.value;
    if (hook === 'PREROUTING') {
      parts.push({ result: 'no', reason: `an arriving packet has no out-interface yet (the rule wants -o ${want})` });
    } else if (packet.outInterface === undefined) {
      add(crit(rule.outInterface, 'unknown', `the out-interface is unknown (the rule wants ${want})`, ''));
    } else {
      const base = ifaceMatches(want, packet.outInterface);
      add(
        crit(
          rule.outInterface,
          base ? 'yes' : 'no',
          `it leaves over ${packet.outInterface}`,
          `it leaves over ${packet.outInterface}, not ${want}`,
        ),
      );
    }
  }
  if (rule.inInterface) {
    const want = rule.inInterface.value;
    if (hook === 'OUTPUT') {
      parts.push({
        result: 'no',
        reason: `a locally generated packet has no in-interface (the rule wants -i ${want})`,
      });
    } else if (packet.inInterface === undefined) {
      add(crit(rule.inInterface, 'unknown', `the in-interface is unknown (the rule wants ${want})`, ''));
    } else {
      const base = ifaceMatches(want, packet.inInterface);
      add(
        crit(
          rule.inInterface,
          base ? 'yes' : 'no',
          `it arrives on ${packet.inInterface}`,
          `it arrives on ${packet.inInterface}, not ${want}`,
        ),
      );
    }
  }
  if (rule.source) {
    const c = rule.source.value;
    const inside = packet.source === undefined ? undefined : cidrContains(c, packet.source);
    if (inside === undefined)
      add(crit(rule.source, 'unknown', `the source address is unknown (the rule wants ${formatCidr(c)})`, ''));
    else
      add(
        crit(
          rule.source,
          inside ? 'yes' : 'no',
          `source ${packet.source} is in ${formatCidr(c)}`,
          `source ${packet.source} is not in ${formatCidr(c)}`,
        ),
      );
  }
  if (rule.destination) {
    const c = rule.destination.value;
    const inside = packet.destination === undefined ? undefined : cidrContains(c, packet.destination);
    if (inside === undefined)
      add(
        crit(rule.destination, 'unknown', `the destination address is unknown (the rule wants ${formatCidr(c)})`, ''),
      );
    else
      add(
        crit(
          rule.destination,
          inside ? 'yes' : 'no',
          `destination ${packet.destination} is in ${formatCidr(c)}`,
          `destination ${packet.destination} is not in ${formatCidr(c)}`,
        ),
      );
  }
  if (rule.dport) {
    const r = rule.dport.value;
    add(
      crit(
        rule.dport,
        inRange(r, packet.dport) ? 'yes' : 'no',
        `port ${packet.dport} is ${r.lo === r.hi ? '' : 'in '}${fmtRange(r)}`,
        `port ${packet.dport} is not ${fmtRange(r)}`,
      ),
    );
  }
  if (rule.dports) {
    const list = rule.dports.value;
    const text = list.map(fmtRange).join(',');
    add(
      crit(
        rule.dports,
        list.some((r) => inRange(r, packet.dport)) ? 'yes' : 'no',
        `port ${packet.dport} is in ${text}`,
        `port ${packet.dport} is not in ${text}`,
      ),
    );
  }
  for (const u of rule.unsupported) parts.push({ result: 'unknown', reason: `"${u}" is not modelled by explain` });
  if (parts.length === 0) return { result: 'yes', reasons: ['it matches every packet'] };
  const failed = parts.filter((p) => p.result === 'no');
  if (failed.length > 0)
    return {
      result: 'no',
      reasons: [...failed.map((p) => p.reason), ...parts.filter((p) => p.result !== 'no').map((p) => p.reason)],
    };
  if (parts.some((p) => p.result === 'unknown')) return { result: 'unknown', reasons: parts.map((p) => p.reason) };
  return { result: 'yes', reasons: parts.map((p) => p.reason) };
}

/** iptables interface names: exact, or a prefix when they end in "+". */
function ifaceMatches(want: string, actual: string): boolean {
  return want.endsWith('+') ? actual.startsWith(want.slice(0, -1)) : want === actual;
}

function describeAction(rule: NatRule): string {
  const t = rule.target;
  switch (t.kind) {
    case 'jump':
      return `jumps to ${t.chain}`;
    case 'RETURN':
      return 'returns';
    case 'ACCEPT':
      return 'accepts';
    case 'REDIRECT':
      return t.toPorts ? `redirects to port ${fmtRange(t.toPorts)}` : 'redirects (same port)';
    case 'DNAT':
      return `rewrites the destination to ${t.to}`;
    case 'other':
      return `${t.name}`;
    case 'none':
      return 'counts the packet and goes on';
  }
}

export function walkPacket(table: NatTable, packet: Packet): Walk {
  const hook = packet.direction === 'inbound' ? 'PREROUTING' : 'OUTPUT';
  const steps: WalkStep[] = [];
  let uncertain = false;
  // Call stack of (chain, next rule position 0-based).
  const stack: { chain: string; pos: number }[] = [{ chain: hook, pos: 0 }];
  while (stack.length > 0) {
    if (steps.length > MAX_STEPS)
      return { hook, steps, verdict: { kind: 'loop', chain: stack[stack.length - 1]?.chain ?? hook }, uncertain: true };
    const frame = stack[stack.length - 1] as { chain: string; pos: number };
    const chain = table.chains.get(frame.chain);
    const rule = chain?.rules[frame.pos];
    if (!chain || !rule) {
      // End of the chain: a user chain returns to its caller; a built-in chain applies its policy.
      stack.pop();
      if (stack.length === 0)
        return { hook, steps, verdict: { kind: 'accept', chain: frame.chain, how: 'policy' }, uncertain };
      continue;
    }
    frame.pos++;
    const m = matchRule(rule, packet, hook);
    const step: WalkStep = {
      chain: rule.chain,
      index: rule.index,
      ...(rule.comment !== undefined ? { comment: rule.comment } : {}),
      line: rule.line,
      result: m.result,
      reasons: m.reasons,
      action: describeAction(rule),
      unsupported: rule.unsupported,
    };
    steps.push(step);
    if (m.result === 'unknown') uncertain = true;
    // An undecidable rule is treated as not matching (the output says so).
    if (m.result !== 'yes') continue;
    const t = rule.target;
    switch (t.kind) {
      case 'jump':
        if (!table.chains.has(t.chain)) {
          return { hook, steps, verdict: { kind: 'other', target: t.chain, step }, uncertain: true };
        }
        if (stack.length >= MAX_DEPTH)
          return { hook, steps, verdict: { kind: 'loop', chain: t.chain }, uncertain: true };
        stack.push({ chain: t.chain, pos: 0 });
        break;
      case 'RETURN':
        stack.pop();
        if (stack.length === 0)
          return {
            hook,
            steps,
            verdict: { kind: 'accept', chain: rule.chain, how: 'return-from-builtin', step },
            uncertain,
          };
        break;
      case 'ACCEPT':
        return { hook, steps, verdict: { kind: 'accept', chain: rule.chain, how: 'accept-rule', step }, uncertain };
      case 'REDIRECT':
        return { hook, steps, verdict: { kind: 'redirect', port: t.toPorts?.lo ?? packet.dport, step }, uncertain };
      case 'DNAT':
        return { hook, steps, verdict: { kind: 'dnat', to: t.to, step }, uncertain };
      case 'other':
        if (['LOG', 'MARK', 'CONNMARK'].includes(t.name)) break; // non-terminating
        return { hook, steps, verdict: { kind: 'other', target: t.name, step }, uncertain };
      case 'none':
        break;
    }
  }
  return { hook, steps, verdict: { kind: 'accept', chain: hook, how: 'policy' }, uncertain };
}
