// The program skeleton every minimesh binary shares, as Linkerd's pkg/flags gives its controllers
// the same flags: --help, --version, --log-level, --log-format; then three steps with one rule each.
//
//   configure  pure validation of flags (and environment): anything it throws is bad input, so the
//              program prints one line naming it and exits 2, before anything starts;
//   run        starts the program with a root logger; it returns an exit code (one-shot programs such
//              as proxy-init) or a Service, which runs until SIGTERM/SIGINT (or ctx.shutdown());
//   close      the Service's graceful shutdown, bounded by shutdownTimeoutMs; then the process exits.
//
// Errors from run print one line and exit with the error's `exitCode` (2 for errors the user must
// fix: UsageError, ConfigError, KubeConfigError, ...) or 1. MINIMESH_DEBUG=1 adds the stack.
import { createLogger, type Logger } from './logger.js';
import { parseFlags, UsageError, type FlagSpecs, type FlagValues } from './flags.js';
import { tuneHeap, type HeapLimits } from './heap.js';

/** What a long-running program returns from run: closed on SIGTERM/SIGINT or ctx.shutdown(). */
export interface Service {
  close(reason: string): Promise<void>;
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** The flags every program gets. A program may redefine one (e.g. another default) in its own flags. */
export const COMMON_FLAGS = {
  'log-level': { type: 'string', default: 'info', description: LOG_LEVELS.slice(0, 5).join(', ') },
  'log-format': { type: 'string', default: 'plain', description: 'plain or json' },
  version: { type: 'boolean', description: 'print the version and exit' },
} as const satisfies FlagSpecs;

export type ProgramFlags<S extends FlagSpecs> = FlagValues<typeof COMMON_FLAGS & S>;

export interface ConfigureInput<S extends FlagSpecs> {
  flags: ProgramFlags<S>;
  positionals: string[];
  env: NodeJS.ProcessEnv;
}

export interface ProgramContext<S extends FlagSpecs, C> {
  name: string;
  version: string;
  flags: ProgramFlags<S>;
  positionals: string[];
  /** What configure returned. */
  config: C;
  logger: Logger;
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  /** Aborts when shutdown begins (a signal that arrives while run is still starting things). */
  signal: AbortSignal;
  /** Starts the graceful shutdown, as SIGTERM does (e.g. an admin /shutdown endpoint). */
  shutdown(reason: string): void;
}

export interface ProgramSpec<S extends FlagSpecs, C> {
  /** "minimesh-destination" */
  name: string;
  summary: string;
  usage?: string;
  version: string;
  /** The program's own flags; the common ones are added. */
  flags: S;
  /** The logger's name field (default: the name without "minimesh-"). */
  logName?: string;
  /** Whether positional arguments are allowed (default: none; one is bad input). */
  positionals?: boolean;
  /** Rewrites argv before parsing (e.g. Go-style bare booleans). */
  normalizeArgv?: (argv: readonly string[]) => string[];
  /** Pure validation: flags (and env) in, the program's configuration out. A throw is bad input: exit 2. */
  configure?: (input: ConfigureInput<S>) => C | Promise<C>;
  /** Level and format of the root logger when they come from configuration rather than the flags. */
  logging?: (config: C, flags: ProgramFlags<S>) => { level: string; format: 'plain' | 'json' };
  run(ctx: ProgramContext<S, C>): Promise<number | void | Service>;
  /** How long close() may take before the program exits anyway (default 30 s). */
  shutdownTimeoutMs?: number;
  /** V8 heap limits the process sets on itself when started (start(), not main()): see heap.ts. */
  heap?: HeapLimits;
}

export interface ProgramIO {
  env?: NodeJS.ProcessEnv;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  /** Where shutdown signals come from (default: process). */
  signals?: NodeJS.EventEmitter;
}

export interface Program {
  /** Runs with these arguments and resolves to the exit code (tests call this). */
  main(argv: string[], io?: ProgramIO): Promise<number>;
  /** Runs with process.argv and exits the process with the code (main.ts calls this). */
  start(): Promise<void>;
}

/** One line for an error, with the program's name once; the stack only with MINIMESH_DEBUG. */
export function reportError(name: string, err: unknown, stderr: NodeJS.WritableStream = process.stderr): void {
  const e = err as Error;
  const message = e?.message ?? String(err);
  stderr.write(`${message.startsWith(`${name}: `) ? message : `${name}: ${message}`}\n`);
  if (process.env.MINIMESH_DEBUG && e?.stack) stderr.write(`${e.stack}\n`);
}

/** The exit code an error asks for: its numeric exitCode, else 1. */
export function exitCodeOf(err: unknown): number {
  const code = (err as { exitCode?: unknown } | null)?.exitCode;
  return typeof code === 'number' ? code : 1;
}

function validateLogging(flags: { 'log-level': string; 'log-format': string }): {
  level: string;
  format: 'plain' | 'json';
} {
  const level = flags['log-level'].trim().toLowerCase();
  if (!LOG_LEVELS.includes(level))
    throw new UsageError(`--log-level: "${flags['log-level']}" is not valid: expected one of ${LOG_LEVELS.join(', ')}`);
  const format = flags['log-format'].trim().toLowerCase();
  if (format !== 'plain' && format !== 'json')
    throw new UsageError(`--log-format: "${flags['log-format']}" is not valid: expected plain or json`);
  return { level, format };
}

export function defineProgram<S extends FlagSpecs, C = undefined>(spec: ProgramSpec<S, C>): Program {
  const specs = { ...COMMON_FLAGS, ...spec.flags } as typeof COMMON_FLAGS & S;
  const info = { name: spec.name, summary: spec.summary, ...(spec.usage ? { usage: spec.usage } : {}) };

  async function main(argv: string[], io: ProgramIO = {}): Promise<number> {
    const stdout = io.stdout ?? process.stdout;
    const stderr = io.stderr ?? process.stderr;
    const env = io.env ?? process.env;
    const signals = io.signals ?? process;

    // 1. Flags and configuration: every failure here is the user's input, exit 2.
    let flags: ProgramFlags<S>;
    let positionals: string[];
    let config: C;
    let logging: { level: string; format: 'plain' | 'json' };
    try {
      const parsed = parseFlags(info, specs, spec.normalizeArgv ? spec.normalizeArgv(argv) : argv);
      if ('help' in parsed) {
        stdout.write(parsed.help);
        return 0;
      }
      flags = parsed.values as ProgramFlags<S>;
      positionals = parsed.positionals;
      if ((flags as { version: boolean }).version) {
        stdout.write(`${spec.name} ${spec.version}\n`);
        return 0;
      }
      if (!spec.positionals && positionals.length > 0)
        throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])} (see ${spec.name} --help)`);
      config = spec.configure ? await spec.configure({ flags, positionals, env }) : (undefined as C);
      logging = spec.logging ? spec.logging(config, flags) : validateLogging(flags as never);
    } catch (err) {
      reportError(spec.name, err, stderr);
      return 2;
    }

    // 2. Run, with shutdown requests (signals, ctx.shutdown) turned into one promise.
    const logger = createLogger({
      name: spec.logName ?? spec.name.replace(/^minimesh-/, ''),
      level: logging.level,
      format: logging.format,
      ...(io.stdout ? { destination: io.stdout } : {}),
    });
    const stopping = new AbortController();
    let reason = '';
    const requestShutdown = (why: string): void => {
      if (stopping.signal.aborted) return;
      reason = why;
      stopping.abort();
    };
    const onTerm = (): void => requestShutdown('SIGTERM');
    const onInt = (): void => requestShutdown('SIGINT');
    signals.once('SIGTERM', onTerm);
    signals.once('SIGINT', onInt);
    const unhook = (): void => {
      signals.off('SIGTERM', onTerm);
      signals.off('SIGINT', onInt);
    };

    let outcome: number | void | Service;
    try {
      outcome = await spec.run({
        name: spec.name,
        version: spec.version,
        flags,
        positionals,
        config,
        logger,
        env,
        stdout,
        signal: stopping.signal,
        shutdown: requestShutdown,
      });
    } catch (err) {
      unhook();
      reportError(spec.name, err, stderr);
      return exitCodeOf(err);
    }
    if (outcome === undefined || typeof outcome === 'number') {
      unhook();
      return outcome ?? 0;
    }

    // 3. A service: wait for the request to stop, then close it within the grace period.
    const service = outcome;
    if (!stopping.signal.aborted)
      await new Promise<void>((resolve) => stopping.signal.addEventListener('abort', () => resolve(), { once: true }));
    unhook();
    logger.info({ signal: reason }, 'shutting down');
    const graceMs = spec.shutdownTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const closed = await Promise.race([
        service.close(reason).then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), graceMs);
          timer.unref();
        }),
      ]);
      if (!closed) {
        logger.warn({ graceMs }, 'shutdown took longer than allowed: exiting anyway');
        return 1;
      }
    } catch (err) {
      logger.error({ err }, 'shutdown failed');
      return 1;
    } finally {
      clearTimeout(timer);
    }
    logger.info('stopped');
    return 0;
  }

  return {
    main,
    async start() {
      if (spec.heap) tuneHeap(spec.heap);
      const code = await main(process.argv.slice(2));
      process.exitCode = code;
      // Whatever is still open (an idle keep-alive socket, a late timer) must not hold the exit up.
      setTimeout(() => process.exit(code), 200).unref();
    },
  };
}

/** A command of a multi-command CLI: its arguments and streams in, an exit code out. */
export interface CommandIO {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export interface CommandLineSpec {
  /** "minimesh" */
  name: string;
  summary: string;
  version: string;
  commands: Record<string, { summary: string; run(argv: string[], io: CommandIO): Promise<number> }>;
}

/**
 * The skeleton for a multi-command CLI ("minimesh inject ..."): --help, --version, one line and exit 2
 * for an unknown command; a command's error is printed once (it names the command itself) with its
 * exitCode, or 1.
 */
export function defineCommandLine(spec: CommandLineSpec): Program {
  const help = (): string => {
    const width = Math.max(10, ...Object.keys(spec.commands).map((n) => n.length + 1));
    const rows = Object.entries(spec.commands).map(([name, c]) => `  ${name.padEnd(width)} ${c.summary}`);
    return `${spec.name} — ${spec.summary}\n\nUsage: ${spec.name} <command> [flags]   (${spec.name} <command> --help for its flags)\n\nCommands:\n${rows.join('\n')}\n\nFlags:\n  -h, --help    show this help\n  --version     print the version and exit\n`;
  };
  async function main(argv: string[], io: ProgramIO = {}): Promise<number> {
    const stdout = io.stdout ?? process.stdout;
    const stderr = io.stderr ?? process.stderr;
    const [name, ...rest] = argv;
    if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
      stdout.write(help());
      return name === undefined ? 2 : 0;
    }
    if (name === '--version') {
      stdout.write(`${spec.name} ${spec.version}\n`);
      return 0;
    }
    const command = spec.commands[name];
    if (!command) {
      reportError(
        spec.name,
        new Error(
          `unknown command "${name}": expected one of ${Object.keys(spec.commands).join(', ')} (see ${spec.name} --help)`,
        ),
        stderr,
      );
      return 2;
    }
    try {
      return await command.run(rest, { stdin: process.stdin, stdout, stderr });
    } catch (err) {
      // One prefix per message: a command's error that already names it ("minimesh certs create: ...")
      // is printed as is, any other gets "minimesh <command>: ".
      const message = (err as Error | null)?.message ?? '';
      const named = message.startsWith(`${spec.name} `) && message.includes(': ');
      reportError(named ? message.slice(0, message.indexOf(': ')) : `${spec.name} ${name}`, err, stderr);
      return exitCodeOf(err);
    }
  }
  return {
    main,
    async start() {
      const code = await main(process.argv.slice(2));
      process.exitCode = code;
      setTimeout(() => process.exit(code), 200).unref();
    },
  };
}
