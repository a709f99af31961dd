import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { UsageError } from './flags.js';
import { defineCommandLine, defineProgram, type Service } from './program.js';

function io() {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (d) => (stdout += String(d)));
  err.on('data', (d) => (stderr += String(d)));
  const signals = new EventEmitter();
  return { io: { stdout: out, stderr: err, signals, env: {} }, signals, out: () => stdout, err: () => stderr };
}

const flags = { addr: { type: 'string', default: '0.0.0.0:1', description: 'listen address' } } as const;

describe('defineProgram', () => {
  const prog = (
    run: Parameters<typeof defineProgram<typeof flags, { port: number }>>[0]['run'],
    shutdownTimeoutMs?: number,
  ) =>
    defineProgram({
      name: 'minimesh-test',
      summary: 'a test program',
      version: '9.9.9',
      flags,
      configure: ({ flags: f }) => {
        const port = Number(f.addr.split(':')[1]);
        if (!(port > 0)) throw new Error(`--addr: "${f.addr}" is not valid: expected host:port`);
        return { port };
      },
      run,
      ...(shutdownTimeoutMs ? { shutdownTimeoutMs } : {}),
    });

  it('adds --help, --version, --log-level and --log-format to every program', async () => {
    const h = io();
    const p = prog(async () => 0);
    expect(await p.main(['--help'], h.io)).toBe(0);
    for (const f of ['--addr', '--log-level', '--log-format', '--version', '--help']) expect(h.out()).toContain(f);
    expect(await p.main(['--version'], h.io)).toBe(0);
    expect(h.out()).toContain('minimesh-test 9.9.9\n');
  });

  it.each([
    [['--nope'], /^minimesh-test: Unknown option '--nope'/],
    [['--addr', 'x'], /^minimesh-test: --addr: "x" is not valid: expected host:port\n$/],
    [['--log-level', 'loud'], /^minimesh-test: --log-level: "loud" is not valid/],
    [['--log-format', 'xml'], /^minimesh-test: --log-format: "xml" is not valid: expected plain or json\n$/],
    [['stray'], /^minimesh-test: unexpected argument "stray"/],
  ])('bad input %j: one line, exit 2, run never called', async (argv, message) => {
    const h = io();
    let ran = false;
    expect(
      await prog(async () => {
        ran = true;
      }).main(argv, h.io),
    ).toBe(2);
    expect(h.err()).toMatch(message);
    expect(h.err().trim().split('\n')).toHaveLength(1);
    expect(ran).toBe(false);
  });

  it('an error from run exits with its exitCode, else 1, naming the program once', async () => {
    const h = io();
    expect(
      await prog(async () => Promise.reject(new UsageError('--addr 0.0.0.0:1: cannot listen: EADDRINUSE'))).main(
        [],
        h.io,
      ),
    ).toBe(2);
    expect(await prog(async () => Promise.reject(new Error('minimesh-test: disk on fire'))).main([], h.io)).toBe(1);
    expect(h.err()).toBe('minimesh-test: --addr 0.0.0.0:1: cannot listen: EADDRINUSE\nminimesh-test: disk on fire\n');
  });

  it('runs a service until SIGTERM, then closes it and exits 0', async () => {
    const h = io();
    const events: string[] = [];
    const done = prog(async (ctx) => {
      events.push(`started on ${ctx.config.port}`);
      return { close: async (why) => void events.push(`closed by ${why}`) } satisfies Service;
    }).main(['--addr', '127.0.0.1:7', '--log-format', 'json'], h.io);
    await new Promise((r) => setTimeout(r, 20));
    h.signals.emit('SIGTERM');
    expect(await done).toBe(0);
    expect(events).toEqual(['started on 7', 'closed by SIGTERM']);
    expect(h.out()).toContain('"msg":"shutting down"');
    expect(h.out()).toContain('"msg":"stopped"');
    expect(h.signals.listenerCount('SIGTERM')).toBe(0);
  });

  it('ctx.shutdown() starts the same graceful shutdown; a close that hangs is cut at the timeout (exit 1)', async () => {
    const h = io();
    const code = await prog(async (ctx) => {
      setTimeout(() => ctx.shutdown('shutdown endpoint'), 10);
      return { close: () => new Promise<void>(() => undefined) };
    }, 100).main(['--log-format', 'json'], h.io);
    expect(code).toBe(1);
    expect(h.out()).toContain('"signal":"shutdown endpoint"');
    expect(h.out()).toContain('shutdown took longer than allowed');
  });

  it('a signal during start-up aborts ctx.signal, and the service closes as soon as run returns it', async () => {
    const h = io();
    const events: string[] = [];
    const done = prog(async (ctx) => {
      h.signals.emit('SIGINT');
      events.push(`aborted=${ctx.signal.aborted}`);
      return { close: async (why) => void events.push(`closed by ${why}`) };
    }).main([], h.io);
    expect(await done).toBe(0);
    expect(events).toEqual(['aborted=true', 'closed by SIGINT']);
  });
});

describe('defineCommandLine', () => {
  const cli = defineCommandLine({
    name: 'mm',
    summary: 'the test CLI',
    version: '1.2.3',
    commands: {
      hello: { summary: 'says hello', run: async (argv, io) => (io.stdout.write(`hello ${argv.join(' ')}\n`), 0) },
      fail: {
        summary: 'fails',
        run: async (argv) => {
          throw argv[0] === 'usage' ? new UsageError('mm fail: --x: bad') : new Error('network down');
        },
      },
    },
  });

  it('dispatches, prints help and the version, and refuses unknown commands with exit 2', async () => {
    const h = io();
    expect(await cli.main(['hello', 'a'], h.io)).toBe(0);
    expect(await cli.main(['--version'], h.io)).toBe(0);
    expect(await cli.main([], h.io)).toBe(2);
    expect(h.out()).toContain('hello a\nmm 1.2.3\nmm — the test CLI');
    expect(await cli.main(['nope'], h.io)).toBe(2);
    expect(h.err()).toBe('mm: unknown command "nope": expected one of hello, fail (see mm --help)\n');
  });

  it("prints a command's error once, naming the command, with its exit code", async () => {
    const h = io();
    expect(await cli.main(['fail', 'usage'], h.io)).toBe(2);
    expect(await cli.main(['fail'], h.io)).toBe(1);
    expect(h.err()).toBe('mm fail: --x: bad\nmm fail: network down\n');
  });
});
