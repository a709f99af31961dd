#!/usr/bin/env node
// minimesh-cni: the CNI plugin, run by the container runtime for every pod sandbox (wiring only;
// see plugin/plugin.ts). Logs go to stderr (the runtime's log); stdout carries the CNI answer.
import { createLogger } from '@minimesh/runtime';
import { defaultDeps } from './plugin/deps.js';
import { runPlugin } from './plugin/plugin.js';

// The runtime starts plugins with its own environment; iptables and nsenter live in sbin.
process.env.PATH = [process.env.PATH, '/usr/local/sbin', '/usr/sbin', '/sbin', '/usr/bin', '/bin']
  .filter(Boolean)
  .join(':');

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d: string) => (text += d));
    process.stdin.on('end', () => resolve(text));
    process.stdin.on('error', reject);
  });
}

async function main(): Promise<number> {
  if (process.argv.includes('--help') || process.argv.includes('-h') || process.argv.includes('--version')) {
    process.stdout.write(
      "minimesh-cni — a chained CNI plugin (spec 1.0: ADD, DEL, CHECK, VERSION) that writes proxy-init's rules\n" +
        'into the network namespace of each pod the minimesh injector meshed in CNI mode.\n\n' +
        'It is run by the container runtime, not by hand: CNI_COMMAND and the other CNI_* variables in the\n' +
        'environment, the network configuration on stdin (docs/cni.md). The minimesh-cni DaemonSet installs it.\n',
    );
    return 0;
  }
  const stdin = process.env.CNI_COMMAND === 'VERSION' ? '' : await readStdin();
  const outcome = await runPlugin(process.env, stdin, (conf) =>
    defaultDeps(
      createLogger({ name: 'cni', level: conf?.logLevel ?? 'info', format: 'plain', destination: process.stderr }),
    ),
  );
  process.stdout.write(outcome.stdout);
  return outcome.code;
}

// No top-level await: the single-executable build is CommonJS.
main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`minimesh-cni: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
