// The rule plan: options in, the nat chains and rules out. Pure: no I/O, no iptables.
// Chain names, rule order and comments follow Linkerd's proxy-init (linkerd2-proxy-init's pkg/iptables)
// exactly, so that `iptables -t nat -L` in a minimesh pod reads like the Linkerd tutorial's listing.
import { toNetworkCidr, type Cidr, type PortRange } from '@minimesh/config';
import { toMultiportGroups } from './port-groups.js';

export type Family = 4 | 6;

export const REDIRECT_CHAIN = 'PROXY_INIT_REDIRECT';
export const OUTPUT_CHAIN = 'PROXY_INIT_OUTPUT';
export const COMMENT_PREFIX = 'proxy-init/';

export interface ProxyInitOptions {
  incomingProxyPort: number;
  outgoingProxyPort: number;
  /** Traffic from this uid is not redirected (the proxy's own). Undefined: no rule. */
  proxyUid?: number | undefined;
  /** Traffic from this gid is not redirected. Undefined: no rule. */
  proxyGid?: number | undefined;
  /** Folded, sorted port ranges (parsePortRanges). */
  inboundPortsToIgnore: PortRange[];
  outboundPortsToIgnore: PortRange[];
  /** Empty: redirect all inbound TCP; otherwise only these ports. */
  portsToRedirect: number[];
  /** Inbound connections from these source networks are not redirected. */
  subnetsToIgnore: Cidr[];
  /** Also plan the IPv6 (ip6tables) rules. */
  ipv6: boolean;
}

/** One rule, in the order iptables-save prints its parts: matches, then comment, then target. */
export interface Rule {
  matches: string[];
  /** Without the "proxy-init/" prefix. */
  comment: string;
  target: string[];
}

export interface ChainPlan {
  name: typeof REDIRECT_CHAIN | typeof OUTPUT_CHAIN;
  /** The built-in chain that jumps to this one. */
  hook: 'PREROUTING' | 'OUTPUT';
  /** Comment of the jump rule in the hook chain. */
  jumpComment: string;
  rules: Rule[];
}

export interface FamilyPlan {
  family: Family;
  table: 'nat';
  chains: ChainPlan[];
}

export interface FirewallPlan {
  families: FamilyPlan[];
}

function ignorePortRules(ranges: readonly PortRange[]): Rule[] {
  return toMultiportGroups(ranges).map((group) => ({
    matches: ['-p', 'tcp', '-m', 'multiport', '--dports', group.join(',')],
    comment: `ignore-port-${group.join(',')}`,
    target: ['-j', 'RETURN'],
  }));
}

function inboundChain(opts: ProxyInitOptions, family: Family): ChainPlan {
  const rules: Rule[] = [...ignorePortRules(opts.inboundPortsToIgnore)];
  for (const subnet of opts.subnetsToIgnore.filter((s) => s.family === family)) {
    const cidr = toNetworkCidr(subnet);
    rules.push({ matches: ['-s', cidr], comment: `ignore-subnet-${cidr}`, target: ['-j', 'RETURN'] });
  }
  const to = ['-j', 'REDIRECT', '--to-ports', String(opts.incomingProxyPort)];
  if (opts.portsToRedirect.length === 0) {
    rules.push({ matches: ['-p', 'tcp'], comment: 'redirect-all-incoming-to-proxy-port', target: to });
  } else {
    for (const port of opts.portsToRedirect) {
      rules.push({
        matches: ['-p', 'tcp', '-m', 'tcp', '--dport', String(port)],
        comment: `redirect-port-${port}-to-proxy-port`,
        target: to,
      });
    }
  }
  return { name: REDIRECT_CHAIN, hook: 'PREROUTING', jumpComment: 'install-proxy-init-prerouting', rules };
}

function outboundChain(opts: ProxyInitOptions): ChainPlan {
  const rules: Rule[] = [];
  if (opts.proxyUid !== undefined) {
    rules.push({
      matches: ['-m', 'owner', '--uid-owner', String(opts.proxyUid)],
      comment: 'ignore-proxy-user-id',
      target: ['-j', 'RETURN'],
    });
  }
  if (opts.proxyGid !== undefined) {
    rules.push({
      matches: ['-m', 'owner', '--gid-owner', String(opts.proxyGid)],
      comment: 'ignore-proxy-group-id',
      target: ['-j', 'RETURN'],
    });
  }
  rules.push({ matches: ['-o', 'lo'], comment: 'ignore-loopback', target: ['-j', 'RETURN'] });
  rules.push(...ignorePortRules(opts.outboundPortsToIgnore));
  rules.push({
    matches: ['-p', 'tcp'],
    comment: 'redirect-all-outgoing-to-proxy-port',
    target: ['-j', 'REDIRECT', '--to-ports', String(opts.outgoingProxyPort)],
  });
  return { name: OUTPUT_CHAIN, hook: 'OUTPUT', jumpComment: 'install-proxy-init-output', rules };
}

/** The whole plan: IPv4 always, IPv6 too when asked; in each, the inbound chain then the outbound one. */
export function planFirewall(opts: ProxyInitOptions): FirewallPlan {
  const families: Family[] = opts.ipv6 ? [4, 6] : [4];
  return {
    families: families.map((family) => ({
      family,
      table: 'nat',
      chains: [inboundChain(opts, family), outboundChain(opts)],
    })),
  };
}

/** A rule as iptables arguments after `-A <chain>`, the comment prefixed and quoted as iptables-save prints it. */
export function ruleArgs(rule: Rule): string[] {
  return [...rule.matches, '-m', 'comment', '--comment', `"${COMMENT_PREFIX}${rule.comment}"`, ...rule.target];
}

/** The jump from the hook chain into ours. */
export function jumpRule(chain: ChainPlan): Rule {
  return { matches: [], comment: chain.jumpComment, target: ['-j', chain.name] };
}

/**
 * The rule lines `iptables-save -t nat` prints for this family's plan, per chain, in rule order
 * (the hook chains hold only our jump; other tools' rules there are not ours to predict).
 */
export function expectedSaveLines(plan: FamilyPlan): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const chain of plan.chains) {
    out.set(chain.hook, [...(out.get(chain.hook) ?? []), ['-A', chain.hook, ...ruleArgs(jumpRule(chain))].join(' ')]);
    out.set(
      chain.name,
      chain.rules.map((rule) => ['-A', chain.name, ...ruleArgs(rule)].join(' ')),
    );
  }
  return out;
}
