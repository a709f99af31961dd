// The thin apply: read the nat table, render one iptables-restore --noflush transaction per family,
// run it, and show the result. If a later family fails, the families already changed are put back
// as they were, so a pod is never left half-configured.
import type { Logger } from '@minimesh/runtime';
import type { ResolvedBinaries, Binaries } from './binaries.js';
import type { CommandRunner } from './command-runner.js';
import { ProxyInitError } from './errors.js';
import { parseNatSave, type NatState } from './nat-state.js';
import type { FamilyPlan, FirewallPlan, Family } from './plan.js';
import { renderApplyPayload, renderCleanupPayload } from './restore-payload.js';

export interface ApplyOptions {
  plan: FirewallPlan;
  binaries: ResolvedBinaries;
  runner: CommandRunner;
  logger: Logger;
  /** Pass --wait to iptables-restore (wait for the xtables lock), like Linkerd's --use-wait-flag. */
  wait?: boolean;
}

export interface FamilyReport {
  family: Family;
  /** The transaction that ran; undefined when nothing had to change. */
  payload: string | undefined;
  /** `iptables-save -t nat` after the change. */
  saved: string;
}

function binariesFor(opts: ApplyOptions, family: Family): Binaries {
  const b = opts.binaries.byFamily.get(family);
  if (!b) throw new ProxyInitError('MINIMESH_PROXY_INIT_MISSING_BINARY', `IPv${family}: no iptables binaries resolved`);
  return b;
}

async function run(opts: ApplyOptions, what: string, argv: string[], input?: string): Promise<string> {
  const shown = opts.runner.describe(argv).join(' ');
  const res = await opts.runner.run(argv, input);
  if (res.code !== 0) {
    throw new ProxyInitError(
      'MINIMESH_PROXY_INIT_COMMAND_FAILED',
      `${what}: \`${shown}\` exited with ${res.code}: ${res.stderr.trim() || res.stdout.trim() || 'no output'}`,
    );
  }
  return res.stdout;
}

async function readNat(opts: ApplyOptions, family: Family): Promise<{ text: string; state: NatState }> {
  const b = binariesFor(opts, family);
  const text = await run(opts, `IPv${family}: reading the nat table`, [b.save, '-t', 'nat']);
  return { text, state: parseNatSave(text) };
}

function restoreArgs(opts: ApplyOptions, b: Binaries, noflush: boolean): string[] {
  return [b.restore, ...(noflush ? ['--noflush'] : []), ...(opts.wait ? ['--wait'] : [])];
}

async function transact(
  opts: ApplyOptions,
  verb: 'applying' | 'removing',
  render: (plan: FamilyPlan, state: NatState) => string | undefined,
): Promise<FamilyReport[]> {
  const log = opts.logger;
  // Read everything first: a table we cannot read means we change nothing at all.
  const before = [];
  for (const plan of opts.plan.families) {
    const { text, state } = await readNat(opts, plan.family);
    log.debug(
      { family: plan.family, chains: [...state.chains] },
      `IPv${plan.family}: nat table before:\n${text.trimEnd()}`,
    );
    before.push({ plan, text, state, payload: render(plan, state) });
  }
  const done: typeof before = [];
  for (const item of before) {
    const b = binariesFor(opts, item.plan.family);
    if (item.payload === undefined) {
      log.info(
        { family: item.plan.family },
        `IPv${item.plan.family}: nothing of proxy-init's in the nat table; nothing to remove`,
      );
      continue;
    }
    const argv = restoreArgs(opts, b, true);
    log.info(
      { family: item.plan.family, command: opts.runner.describe(argv).join(' ') },
      `IPv${item.plan.family}: ${verb} in one transaction (${opts.runner.describe(argv).join(' ')}):\n${item.payload.trimEnd()}`,
    );
    try {
      await run(opts, `IPv${item.plan.family}: ${verb} the nat rules`, argv, item.payload);
    } catch (err) {
      await rollBack(opts, done);
      throw err;
    }
    done.push(item);
  }
  const reports: FamilyReport[] = [];
  for (const item of before) {
    const { text } = await readNat(opts, item.plan.family);
    log.info(
      { family: item.plan.family },
      `IPv${item.plan.family}: iptables-save -t nat now shows:\n${text.trimEnd()}`,
    );
    reports.push({ family: item.plan.family, payload: item.payload, saved: text });
  }
  return reports;
}

/** Puts the nat tables of already-changed families back as they were saved. */
async function rollBack(opts: ApplyOptions, done: Array<{ plan: FamilyPlan; text: string }>): Promise<void> {
  for (const item of done.reverse()) {
    const b = binariesFor(opts, item.plan.family);
    try {
      await run(opts, `IPv${item.plan.family}: rolling back`, [...restoreArgs(opts, b, false), '-T', 'nat'], item.text);
      opts.logger.warn({ family: item.plan.family }, `IPv${item.plan.family}: rolled the nat table back to how it was`);
    } catch (err) {
      opts.logger.error({ family: item.plan.family, err }, `IPv${item.plan.family}: could not roll the nat table back`);
    }
  }
}

/** Installs (or, on a re-run, rebuilds in place) the plan's chains and jumps. */
export function applyFirewall(opts: ApplyOptions): Promise<FamilyReport[]> {
  return transact(opts, 'applying', renderApplyPayload);
}

/** Removes exactly what applyFirewall added: our jumps and our chains. */
export function cleanupFirewall(opts: ApplyOptions): Promise<FamilyReport[]> {
  return transact(opts, 'removing', renderCleanupPayload);
}
