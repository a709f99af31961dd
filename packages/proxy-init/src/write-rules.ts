// Writes (or removes) the rules of a rule command in a network namespace: the binaries for its mode
// (with Linkerd's fallback), the close-wait sysctl, then one transaction per family. The one code
// path behind proxy-init's init container and minimesh-cni's ADD/DEL, so both write the same rules.
import type { Logger } from '@minimesh/runtime';
import { applyFirewall, cleanupFirewall, type FamilyReport } from './apply.js';
import { findInPath, resolveBinaries, type ResolvedBinaries } from './binaries.js';
import type { CommandRunner } from './command-runner.js';
import { ProxyInitError } from './errors.js';
import type { RuleCommand } from './options.js';
import { planFirewall, type FirewallPlan } from './plan.js';

export interface WriteRulesOptions {
  rules: RuleCommand;
  /** Remove proxy-init's chains and jumps instead of writing them. */
  cleanup?: boolean;
  /** Pass --wait to iptables-restore. */
  wait?: boolean;
  runner: CommandRunner;
  logger: Logger;
  /** Finds a binary in PATH (tests replace it). */
  lookup?: (name: string) => string | undefined;
}

export interface WriteRulesResult {
  plan: FirewallPlan;
  binaries: ResolvedBinaries;
  reports: FamilyReport[];
}

/** Resolves the binaries of the command's mode, or the fallback's, warning when it falls back. */
export function binariesFor(
  rules: RuleCommand,
  logger: Logger,
  lookup: (name: string) => string | undefined = (n) => findInPath(n),
): { plan: FirewallPlan; binaries: ResolvedBinaries } {
  const plan = planFirewall(rules.options);
  const binaries = resolveBinaries(
    rules.mode,
    plan.families.map((f) => f.family),
    lookup,
  );
  if (binaries.fellBackFrom) {
    logger.warn(
      { mode: binaries.mode },
      `iptables mode ${binaries.fellBackFrom}: its binaries are not installed; falling back to ${binaries.mode}`,
    );
  }
  return { plan, binaries };
}

export async function writeRules(opts: WriteRulesOptions): Promise<WriteRulesResult> {
  const { rules, runner, logger: log } = opts;
  const cleanup = opts.cleanup ?? false;
  const { plan, binaries } = binariesFor(rules, log, opts.lookup);
  log.info(
    { mode: binaries.mode, families: plan.families.map((f) => f.family) },
    `${cleanup ? 'removing' : 'configuring'} the nat table (iptables mode ${binaries.mode})`,
  );
  if (!cleanup && rules.closeWaitTimeoutSecs > 0) {
    const argv = ['sysctl', '-w', `net.netfilter.nf_conntrack_tcp_timeout_close_wait=${rules.closeWaitTimeoutSecs}`];
    const res = await runner.run(argv);
    if (res.code !== 0) {
      throw new ProxyInitError(
        'MINIMESH_PROXY_INIT_COMMAND_FAILED',
        `--timeout-close-wait-secs: \`${runner.describe(argv).join(' ')}\` exited with ${res.code}: ${res.stderr.trim()}; nothing was changed`,
      );
    }
    log.info(res.stdout.trim());
  }
  const applyOpts = { plan, binaries, runner, logger: log, wait: opts.wait ?? false };
  const reports = await (cleanup ? cleanupFirewall(applyOpts) : applyFirewall(applyOpts));
  return { plan, binaries, reports };
}
