// Runs the iptables commands (and sysctl), optionally inside another network namespace via
// `nsenter --net=<path> --`, as Linkerd's --netns does. Bounded in time.
import { spawn } from 'node:child_process';

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CommandRunner {
  /** The command line as it is really run (with the nsenter prefix), for logs. */
  describe(argv: string[]): string[];
  run(argv: string[], input?: string): Promise<CommandResult>;
}

export interface CommandRunnerOptions {
  /** A network namespace file, e.g. /var/run/netns/pod-a. */
  netns?: string | undefined;
  timeoutMs?: number;
}

export function createCommandRunner(opts: CommandRunnerOptions = {}): CommandRunner {
  const describe = (argv: string[]): string[] =>
    opts.netns ? ['nsenter', `--net=${opts.netns}`, '--', ...argv] : argv;
  return {
    describe,
    run(argv, input) {
      const [cmd, ...args] = describe(argv) as [string, ...string[]];
      return new Promise((resolve) => {
        const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: opts.timeoutMs ?? 30_000 });
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        child.on('error', (err) => resolve({ code: 127, stdout, stderr: stderr + err.message }));
        child.on('close', (code, signal) =>
          resolve({ code: code ?? 128, stdout, stderr: signal ? `${stderr}killed by ${signal}` : stderr }),
        );
        child.stdin.on('error', () => undefined);
        child.stdin.end(input ?? '');
      });
    },
  };
}
