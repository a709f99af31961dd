#!/usr/bin/env node
// minimesh: the user's front door. One file per command under commands/; this only dispatches.
import { runMain, UsageError } from '@minimesh/runtime';
import { certsCommand } from './commands/certs.js';
import { checkCommand } from './commands/check.js';
import { explainCommand } from './commands/explain.js';
import { injectCommand } from './commands/inject.js';
import { uninjectCommand } from './commands/uninject.js';
import type { Command } from './io.js';

const COMMANDS: Record<string, { run: Command; summary: string }> = {
  inject: { run: injectCommand, summary: 'add the proxy to the workloads of a YAML manifest' },
  uninject: { run: uninjectCommand, summary: 'remove what inject added' },
  explain: {
    run: explainCommand,
    summary:
      "say which nat rule a pod's connection meets and where its bytes go (explain ns/pod --port P | --to HOST:PORT)",
  },
  check: { run: checkCommand, summary: 'check the control plane, webhook, certificates (expiry, chain) and readiness' },
  certs: { run: certsCommand, summary: 'create the trust anchor and issuer certificates (certs create)' },
};

function help(): string {
  const rows = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return `minimesh — the minimesh command line\n\nUsage: minimesh <command> [flags]   (minimesh <command> --help for its flags)\n\nCommands:\n${rows.join('\n')}\n`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(help());
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command)
    throw new UsageError(
      `unknown command "${name}": expected one of ${Object.keys(COMMANDS).join(', ')} (see minimesh --help)`,
    );
  try {
    return await command.run(rest, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
  } catch (err) {
    // Command errors already name the command ("minimesh explain: ..."): print them once, as they are.
    const e = err as Error & { exitCode?: number };
    if (!e.message.startsWith(`minimesh ${name}`)) throw err;
    process.stderr.write(`${e.message}\n`);
    if (process.env.MINIMESH_DEBUG && e.stack) process.stderr.write(`${e.stack}\n`);
    return typeof e.exitCode === 'number' ? e.exitCode : 1;
  }
}

void runMain('minimesh', main);
