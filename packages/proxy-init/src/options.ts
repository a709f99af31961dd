// Flags → a validated command. Linkerd-compatible names (those of linkerd2-proxy-init's
// proxy-init/cmd/root.go); every bad value becomes a ConfigError naming the flag, the value and what
// was expected, before anything is applied.
import { existsSync } from 'node:fs';
import {
  ConfigError,
  DEFAULT_PORTS,
  parseBoolean,
  parseCidrList,
  parseLogFormat,
  parseLogLevel,
  parsePort,
  parsePortRanges,
  type LogFormat,
  type LogLevel,
} from '@minimesh/config';
import { parseFlags, UsageError, type FlagSpecs, type FlagValues, type ProgramInfo } from '@minimesh/runtime';
import { parseMode, type IptablesMode } from './binaries.js';
import type { ProxyInitOptions } from './plan.js';

export const PROGRAM: ProgramInfo = {
  name: 'minimesh-proxy-init',
  summary: "writes the iptables nat rules that send a pod's TCP through the minimesh proxy (atomic, idempotent)",
  usage: 'minimesh-proxy-init [flags]   e.g. --incoming-proxy-port 4143 --outgoing-proxy-port 4140 --proxy-uid 2102',
};

export const FLAGS = {
  'incoming-proxy-port': {
    type: 'string',
    short: 'p',
    default: String(DEFAULT_PORTS.inbound),
    description: 'port inbound TCP is redirected to (the proxy inbound listener)',
  },
  'outgoing-proxy-port': {
    type: 'string',
    short: 'o',
    default: String(DEFAULT_PORTS.outbound),
    description: 'port outbound TCP is redirected to (the proxy outbound listener)',
  },
  'proxy-uid': {
    type: 'string',
    short: 'u',
    default: '-1',
    description: "traffic from this uid is not redirected (the proxy's own); -1: none",
  },
  'proxy-gid': {
    type: 'string',
    short: 'g',
    default: '-1',
    description: 'traffic from this gid is not redirected; -1: none',
  },
  'ports-to-redirect': {
    type: 'string',
    short: 'r',
    multiple: true,
    description: 'redirect only these inbound ports (comma separated); default: all',
  },
  'inbound-ports-to-ignore': {
    type: 'string',
    multiple: true,
    description: 'inbound ports not redirected: N or lo-hi, comma separated',
  },
  'outbound-ports-to-ignore': {
    type: 'string',
    multiple: true,
    description: 'outbound ports not redirected: N or lo-hi, comma separated',
  },
  'subnets-to-ignore': {
    type: 'string',
    multiple: true,
    description:
      'CIDRs matched on the SOURCE of inbound connections: those connections reach the app without the proxy (outbound is not affected)',
  },
  'iptables-mode': {
    type: 'string',
    default: '',
    description: 'legacy, nft or plain (overrides --firewall-bin-path); default legacy',
  },
  'firewall-bin-path': {
    type: 'string',
    default: '',
    description: 'older form of --iptables-mode: iptables-legacy, iptables-nft or iptables',
  },
  'firewall-save-bin-path': {
    type: 'string',
    default: '',
    description: 'older form of --iptables-mode: the matching *-save binary',
  },
  ipv6: { type: 'string', default: 'true', description: 'also configure ip6tables (--ipv6=false to skip)' },
  simulate: { type: 'string', default: 'false', description: 'print the rules and commands; change nothing' },
  cleanup: { type: 'string', default: 'false', description: 'remove the chains and jumps proxy-init added, then exit' },
  netns: {
    type: 'string',
    default: '',
    description: 'run the commands in this network namespace (nsenter --net=PATH)',
  },
  'use-wait-flag': {
    type: 'string',
    short: 'w',
    default: 'false',
    description: 'pass --wait to iptables-restore (wait for the xtables lock)',
  },
  'timeout-close-wait-secs': {
    type: 'string',
    default: '0',
    description: 'if > 0, set net.netfilter.nf_conntrack_tcp_timeout_close_wait first',
  },
  'log-format': { type: 'string', default: 'plain', description: 'plain or json' },
  'log-level': { type: 'string', default: 'info', description: 'trace, debug, info, warn, error' },
} as const satisfies FlagSpecs;

/** Go-style booleans: `--ipv6`, `--ipv6=false`, `-w`. Bare forms become `=true` for the string-typed specs. */
const BOOLEAN_FLAGS = new Map([
  ['--ipv6', '--ipv6'],
  ['--simulate', '--simulate'],
  ['--cleanup', '--cleanup'],
  ['--use-wait-flag', '--use-wait-flag'],
  ['-w', '--use-wait-flag'],
]);

export function normalizeArgv(argv: readonly string[]): string[] {
  return argv.map((arg) => {
    const long = BOOLEAN_FLAGS.get(arg);
    return long ? `${long}=true` : arg;
  });
}

/**
 * The part of a command that decides the rules: what another program that writes the same rules
 * (minimesh-cni, from an injected pod's arguments) takes from proxy-init's flags.
 */
export interface RuleCommand {
  options: ProxyInitOptions;
  mode: IptablesMode;
  closeWaitTimeoutSecs: number;
}

export interface ProxyInitCommand extends RuleCommand {
  simulate: boolean;
  cleanup: boolean;
  netns: string | undefined;
  wait: boolean;
  logFormat: LogFormat;
  logLevel: LogLevel;
}

function parseId(field: string, value: string): number | undefined {
  const text = value.trim();
  if (text === '-1') return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 4294967294)
    throw new ConfigError(field, value, 'a numeric id 0-4294967294, or -1 for none');
  return n;
}

function parseSeconds(field: string, value: string): number {
  const text = value.trim();
  if (!/^\d+$/.test(text) || Number(text) > 2_147_483_647)
    throw new ConfigError(field, value, 'a whole number of seconds (0 to leave the setting alone)');
  return Number(text);
}

function parsePortList(field: string, values: readonly string[]): number[] {
  const items = values
    .flatMap((v) => v.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  return [...new Set(items.map((item) => parsePort(field, item)))].sort((a, b) => a - b);
}

/** The flags that decide the rules, and nothing else: no --netns, --cleanup, --simulate or logging. */
export const RULE_FLAG_NAMES = [
  'incoming-proxy-port',
  'outgoing-proxy-port',
  'proxy-uid',
  'proxy-gid',
  'ports-to-redirect',
  'inbound-ports-to-ignore',
  'outbound-ports-to-ignore',
  'subnets-to-ignore',
  'iptables-mode',
  'firewall-bin-path',
  'firewall-save-bin-path',
  'ipv6',
  'timeout-close-wait-secs',
] as const satisfies readonly (keyof typeof FLAGS)[];

type RuleFlagName = (typeof RULE_FLAG_NAMES)[number];
export const RULE_FLAGS = Object.fromEntries(RULE_FLAG_NAMES.map((n) => [n, FLAGS[n]])) as Pick<
  typeof FLAGS,
  RuleFlagName
>;

/** The rule part of the flags, validated; throws ConfigError on the first bad one. */
export function toRuleCommand(values: FlagValues<typeof RULE_FLAGS>): RuleCommand {
  return {
    options: {
      incomingProxyPort: parsePort('--incoming-proxy-port', values['incoming-proxy-port']),
      outgoingProxyPort: parsePort('--outgoing-proxy-port', values['outgoing-proxy-port']),
      proxyUid: parseId('--proxy-uid', values['proxy-uid']),
      proxyGid: parseId('--proxy-gid', values['proxy-gid']),
      inboundPortsToIgnore: parsePortRanges('--inbound-ports-to-ignore', values['inbound-ports-to-ignore']),
      outboundPortsToIgnore: parsePortRanges('--outbound-ports-to-ignore', values['outbound-ports-to-ignore']),
      portsToRedirect: parsePortList('--ports-to-redirect', values['ports-to-redirect']),
      subnetsToIgnore: parseCidrList('--subnets-to-ignore', values['subnets-to-ignore']),
      ipv6: parseBoolean('--ipv6', values.ipv6),
    },
    mode: parseMode({
      iptablesMode: values['iptables-mode'],
      firewallBinPath: values['firewall-bin-path'],
      firewallSavePath: values['firewall-save-bin-path'],
    }),
    closeWaitTimeoutSecs: parseSeconds('--timeout-close-wait-secs', values['timeout-close-wait-secs']),
  };
}

/**
 * proxy-init arguments (as the injector writes them) → the rule command, for a program that writes
 * the same rules elsewhere (minimesh-cni). Only the rule flags are accepted: any other flag, a
 * positional argument or a bad value throws (UsageError or ConfigError) naming it.
 */
export function parseRuleArgs(argv: readonly string[]): RuleCommand {
  const info = { name: 'proxy-init arguments', summary: PROGRAM.summary };
  const parsed = parseFlags(info, RULE_FLAGS, normalizeArgv(argv));
  if ('help' in parsed) throw new UsageError('proxy-init arguments: --help is not a rule flag');
  if (parsed.positionals.length > 0)
    throw new UsageError(`proxy-init arguments: unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
  return toRuleCommand(parsed.values);
}

/** Validates every flag; throws ConfigError on the first bad one. */
export function parseCommand(values: FlagValues<typeof FLAGS>): ProxyInitCommand {
  const netns = values.netns.trim();
  if (netns !== '' && !existsSync(netns)) {
    throw new ConfigError(
      '--netns',
      values.netns,
      'the path of an existing network namespace file, e.g. /var/run/netns/<name>',
    );
  }
  return {
    ...toRuleCommand(values),
    simulate: parseBoolean('--simulate', values.simulate),
    cleanup: parseBoolean('--cleanup', values.cleanup),
    netns: netns === '' ? undefined : netns,
    wait: parseBoolean('--use-wait-flag', values['use-wait-flag']),
    logFormat: parseLogFormat('--log-format', values['log-format']),
    logLevel: parseLogLevel('--log-level', values['log-level']),
  };
}
