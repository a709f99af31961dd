import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, parseFlags, parseListenAddr, startAdminServer, UsageError } from './index.js';

describe('parseListenAddr', () => {
  it.each([
    ['0.0.0.0:8080', { host: '0.0.0.0', port: 8080 }],
    ['[::]:4143', { host: '::', port: 4143 }],
    [':8086', { host: '0.0.0.0', port: 8086 }],
  ])('%s', (input, want) => expect(parseListenAddr('--addr', input)).toEqual(want));
  it('names the flag and the expected form', () => {
    expect(() => parseListenAddr('--addr', 'eight-thousand')).toThrow(
      '--addr: "eight-thousand" is not valid: expected host:port',
    );
  });
});

describe('parseFlags', () => {
  const info = { name: 'prog', summary: 'does things' };
  const specs = {
    addr: { type: 'string', default: '0.0.0.0:1', description: 'listen address' },
    verbose: { type: 'boolean', description: 'more' },
  } as const;
  it('fills defaults', () => {
    const r = parseFlags(info, specs, ['--verbose']);
    expect('values' in r && r.values).toEqual({ addr: '0.0.0.0:1', verbose: true });
  });
  it('renders help', () => {
    const r = parseFlags(info, specs, ['--help']);
    expect('help' in r && r.help).toContain('--addr <value>');
  });
  it('renders no empty Flags block for a program without flags of its own', () => {
    for (const s of [{}, specs]) {
      const r = parseFlags(info, s, ['--help']);
      const help = 'help' in r ? r.help : '';
      expect(help).toMatch(/\nFlags:\n {2}\S/);
      expect(help).not.toMatch(/\n\n\n|:\n\n/);
      expect(help).toMatch(/ {2}-h, --help {29}show this help\n$/);
    }
  });
  it('refuses unknown flags with exit code 2', () => {
    try {
      parseFlags(info, specs, ['--nope']);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).exitCode).toBe(2);
      expect((err as Error).message).toContain("Unknown option '--nope'");
    }
  });
});

describe('logger', () => {
  it('never prints a token', () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d) => (text += String(d)));
    const log = createLogger({ name: 't', format: 'json', destination: out });
    log.info({ token: 'eyJsecret', req: { token: 'x2' } }, 'hello');
    expect(text).toContain('hello');
    expect(text).not.toContain('eyJsecret');
    expect(text).not.toContain('x2');
  });
});

describe('admin server', () => {
  it('serves /live, /ready (latched by the callback) and /metrics', async () => {
    let ready: boolean | string = 'no certificate yet';
    const admin = await startAdminServer({
      addr: '127.0.0.1:0',
      logger: createLogger({ name: 't', level: 'silent' }),
      ready: () => ready,
    });
    const get = (p: string) => fetch(`http://127.0.0.1:${admin.port}${p}`);
    expect((await get('/live')).status).toBe(200);
    const notReady = await get('/ready');
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toContain('no certificate yet');
    ready = true;
    expect((await get('/ready')).status).toBe(200);
    expect(await (await get('/metrics')).text()).toContain('process_cpu_user_seconds_total');
    await admin.close();
  });

  it('answers 408 and closes a client whose request head is not complete within headersTimeoutMs', async () => {
    const admin = await startAdminServer({
      addr: '127.0.0.1:0',
      logger: createLogger({ name: 't', level: 'silent' }),
      headersTimeoutMs: 300,
    });
    const { connect } = await import('node:net');
    const t0 = Date.now();
    const answer = await new Promise<string>((resolve) => {
      let out = '';
      const s = connect(admin.port, '127.0.0.1', () => s.write('GET /metrics HTTP/1.1\r\nHost: x\r\n'));
      const drip = setInterval(() => s.writable && s.write('X'), 50);
      s.on('data', (d: Buffer) => (out += d.toString()));
      s.on('close', () => {
        clearInterval(drip);
        resolve(out);
      });
      s.on('error', () => undefined);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    expect(Date.now() - t0).toBeLessThan(5000);
    await admin.close();
  });
});

describe('runMain', () => {
  it('prints the program name once, even when the error already carries it', async () => {
    const { runMain } = await import('./run-main.js');
    const writes: string[] = [];
    const orig = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => (writes.push(String(chunk)), true)) as typeof process.stderr.write;
    try {
      await runMain('prog', async () => {
        parseFlags({ name: 'prog', summary: 's' }, {}, ['--nope']);
      });
      await runMain('prog', async () => {
        throw new Error('config file missing');
      });
    } finally {
      process.stderr.write = orig;
      process.exitCode = 0;
    }
    expect(writes[0]).toMatch(/^prog: Unknown option '--nope'/);
    expect(writes[0]).not.toContain('prog: prog:');
    expect(writes[1]).toBe('prog: config file missing\n');
  });
});

describe('log formats (one line per event)', () => {
  function capture(format: 'plain' | 'json') {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d) => (text += String(d)));
    return { log: createLogger({ name: 'destination', format, destination: out }), text: () => text };
  }

  it('plain: time level component message key=value, an error and its stack on the same line', () => {
    const { log, text } = capture('plain');
    log.info({ addr: '0.0.0.0:8086', n: 3, why: 'two words' }, 'listening');
    log.error({ err: new Error('boom\nsecond line') }, 'failed');
    const lines = text().split('\n').filter(Boolean);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info destination listening addr=0\.0\.0\.0:8086 n=3 why="two words"$/,
    );
    expect(lines[1]).toMatch(/^\S+Z error destination failed err="boom\\nsecond line" err\.stack="Error: boom\\n/);
    expect(text()).not.toContain('"stack":');
  });

  it('json: an ISO time and a string level', () => {
    const { log, text } = capture('json');
    log.warn({ k: 'v' }, 'hello');
    const rec = JSON.parse(text()) as Record<string, unknown>;
    expect(rec).toMatchObject({ level: 'warn', name: 'destination', msg: 'hello', k: 'v' });
    expect(new Date(rec.time as string).toISOString()).toBe(rec.time);
  });
});
