// The proxy-init program: flags → validated command → binaries and capability checks → one
// transaction per family → what was applied and the resulting nat table, in the logs.
// Every check that can refuse runs before anything is changed.
import { MINIMESH_VERSION } from '@minimesh/config';
import { defineProgram, type Logger, type Program } from '@minimesh/runtime';
import { findInPath, nominalBinaries, resolveBinaries, type ResolvedBinaries } from './binaries.js';
import { CAP_NET_ADMIN, hasCapability } from './capabilities.js';
import { createCommandRunner, type CommandRunner } from './command-runner.js';
import { ProxyInitError } from './errors.js';
import { FLAGS, normalizeArgv, parseCommand, PROGRAM, type ProxyInitCommand } from './options.js';
import { planFirewall, type FirewallPlan } from './plan.js';
import { parseNatSave } from './nat-state.js';
import { writeRules } from './write-rules.js';
import { renderApplyPayload, renderCleanupPayload } from './restore-payload.js';

export interface ProgramDeps {
  /** Where logs go (stdout by default). */
  stdout?: NodeJS.WritableStream;
  /** Where the one line about bad input or a failure goes (stderr by default). */
  stderr?: NodeJS.WritableStream;
  lookup?: (name: string) => string | undefined;
  hasNetAdmin?: () => boolean;
  runner?: (netns: string | undefined) => CommandRunner;
}

function simulate(
  cmd: ProxyInitCommand,
  plan: FirewallPlan,
  binaries: ResolvedBinaries,
  runner: CommandRunner,
  log: Logger,
  out: NodeJS.WritableStream,
): void {
  log.info('simulate: printing what would run; nothing is changed');
  if (cmd.closeWaitTimeoutSecs > 0 && !cmd.cleanup) {
    log.info(
      `would run: ${runner.describe(['sysctl', '-w', `net.netfilter.nf_conntrack_tcp_timeout_close_wait=${cmd.closeWaitTimeoutSecs}`]).join(' ')}`,
    );
  }
  for (const family of plan.families) {
    const b = binaries.byFamily.get(family.family);
    if (!b) continue;
    const restore = runner.describe([b.restore, '--noflush', ...(cmd.wait ? ['--wait'] : [])]).join(' ');
    // Shown against a pod with nothing of ours yet (apply), or with everything of ours (cleanup).
    const payload = cmd.cleanup
      ? renderCleanupPayload(
          family,
          parseNatSave(
            [
              '*nat',
              ...family.chains.flatMap((c) => [`:${c.name} - [0:0]`, `-A ${c.hook} -j ${c.name}`]),
              'COMMIT',
            ].join('\n'),
          ),
        )
      : renderApplyPayload(family, parseNatSave(''));
    log.info(
      { family: family.family },
      `IPv${family.family}: would run ${runner.describe([b.save, '-t', 'nat']).join(' ')}, then ${restore} with:`,
    );
    // The payload is the command's output, not a log event: printed as is, one rule a line, after its log line.
    out.write(`${(payload ?? '').trimEnd()}\n`);
  }
}

/** The program on the shared skeleton: flags → validated command (bad input: one line, exit 2) → apply. */
export function proxyInitProgram(deps: ProgramDeps = {}): Program {
  return defineProgram({
    ...PROGRAM,
    version: MINIMESH_VERSION,
    flags: FLAGS,
    normalizeArgv,
    configure: ({ flags }) => parseCommand(flags),
    logging: (cmd) => ({ level: cmd.logLevel, format: cmd.logFormat }),
    run: ({ config, logger }) => apply(config, logger, deps),
  });
}

/** Runs proxy-init with these arguments; resolves to the exit code. */
export function proxyInitMain(argv: string[], deps: ProgramDeps = {}): Promise<number> {
  return proxyInitProgram(deps).main(argv, {
    ...(deps.stdout ? { stdout: deps.stdout } : {}),
    ...(deps.stderr ? { stderr: deps.stderr } : {}),
  });
}

async function apply(cmd: ProxyInitCommand, log: Logger, deps: ProgramDeps): Promise<number> {
  const lookup = deps.lookup ?? ((name: string) => findInPath(name));
  const runner = (deps.runner ?? ((netns) => createCommandRunner({ netns })))(cmd.netns);

  if (cmd.simulate) {
    const plan = planFirewall(cmd.options);
    const families = plan.families.map((f) => f.family);
    let binaries: ResolvedBinaries;
    try {
      binaries = resolveBinaries(cmd.mode, families, lookup);
    } catch (err) {
      log.warn(`${(err as Error).message}; simulating with the ${cmd.mode} names`);
      binaries = nominalBinaries(cmd.mode, families);
    }
    if (binaries.fellBackFrom) {
      log.warn(
        { mode: binaries.mode },
        `iptables mode ${binaries.fellBackFrom}: its binaries are not installed; falling back to ${binaries.mode}`,
      );
    }
    simulate(cmd, plan, binaries, runner, log, deps.stdout ?? process.stdout);
    return 0;
  }
  // Every check that can refuse runs before anything is changed.
  resolveBinaries(
    cmd.mode,
    planFirewall(cmd.options).families.map((f) => f.family),
    lookup,
  );
  if (cmd.netns && !lookup('nsenter')) {
    throw new ProxyInitError(
      'MINIMESH_PROXY_INIT_MISSING_BINARY',
      `--netns ${cmd.netns}: needs nsenter (util-linux), which is not in PATH`,
    );
  }
  if (!(deps.hasNetAdmin ?? (() => hasCapability(CAP_NET_ADMIN)))()) {
    throw new ProxyInitError(
      'MINIMESH_PROXY_INIT_NO_CAPABILITY',
      'no CAP_NET_ADMIN: changing iptables needs the NET_ADMIN capability (run as root, or give the container NET_ADMIN and NET_RAW); nothing was changed',
    );
  }
  await writeRules({
    rules: cmd,
    cleanup: cmd.cleanup,
    wait: cmd.wait,
    runner,
    logger: cmd.netns ? log.child({ netns: cmd.netns }) : log,
    lookup,
  });
  log.info(cmd.cleanup ? 'proxy-init chains and jumps removed' : 'nat rules in place');
  return 0;
}
