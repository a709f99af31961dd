import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { parseHostPort, validateRedirect } from './validate-redirect.js';
import { notRedirectedMessage, validatorMain } from './program.js';
import { PassThrough } from 'node:stream';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

// Without root there is no redirect to make; what a redirect would do (deliver the connection to
// 127.0.0.1:<listen port>) is done here by connecting there directly.
describe('validateRedirect', () => {
  it('succeeds when the connection arrives at its own listener with its token', async () => {
    const port = await freePort();
    const r = await validateRedirect({ connectAddr: { host: '127.0.0.1', port }, listenPort: port, timeoutMs: 2000 });
    expect(r).toMatchObject({ ok: true, listen: `127.0.0.1:${port}` });
  });

  it('fails, saying why, when the connection goes somewhere nothing answers', async () => {
    const [listenPort, closed] = [await freePort(), await freePort()];
    const r = await validateRedirect({
      connectAddr: { host: '127.0.0.1', port: closed },
      listenPort,
      timeoutMs: 2000,
    });
    expect(r).toEqual({
      ok: false,
      reason: 'not-redirected',
      listen: `127.0.0.1:${listenPort}`,
      detail: 'connect failed: ECONNREFUSED',
    });
  });

  it('fails when another server answers: the token proves the connection reached the validator', async () => {
    const listenPort = await freePort();
    const other = createServer((s) => s.end('not the token\n'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    const port = (other.address() as { port: number }).port;
    try {
      const r = await validateRedirect({ connectAddr: { host: '127.0.0.1', port }, listenPort, timeoutMs: 2000 });
      expect(r).toMatchObject({
        ok: false,
        reason: 'not-redirected',
        detail: `something other than 127.0.0.1:${listenPort} answered`,
      });
    } finally {
      other.close();
    }
  });

  it('reports a busy outbound port as such', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as { port: number }).port;
    try {
      const r = await validateRedirect({ connectAddr: { host: '127.0.0.1', port }, listenPort: port, timeoutMs: 2000 });
      expect(r).toMatchObject({ ok: false, reason: 'listen' });
      expect(r.ok ? '' : r.detail).toMatch(/EADDRINUSE/);
    } finally {
      busy.close();
    }
  });
});

describe('minimesh-network-validator', () => {
  it('exits 1 with one line that says what is wrong and what to do', async () => {
    const [listenPort, closed] = [await freePort(), await freePort()];
    const out = new PassThrough();
    const err = new PassThrough();
    let errText = '';
    err.on('data', (d: Buffer) => (errText += d.toString()));
    const code = await validatorMain(
      ['--connect-addr', `127.0.0.1:${closed}`, '--listen-port', String(listenPort), '--timeout', '2s'],
      { stdout: out, stderr: err, env: { NODE_NAME: 'node-a' } },
    );
    expect(code).toBe(1);
    expect(errText.trim().split('\n')).toHaveLength(1);
    expect(errText).toContain(
      `minimesh-network-validator: this pod's traffic is not redirected to the proxy: a connection to 127.0.0.1:${closed} did not reach 127.0.0.1:${listenPort} (connect failed: ECONNREFUSED)`,
    );
    expect(errText).toContain('on node node-a');
    expect(errText).toContain('kubectl -n minimesh get daemonset minimesh-cni');
  });

  it.each([
    [
      ['--connect-addr', 'example.com:80'],
      /--connect-addr: "example.com:80" is not valid: expected an IP address and port/,
    ],
    [['--listen-port', '0'], /--listen-port/],
    [['--timeout', 'soon'], /--timeout/],
  ])('refuses %j with exit 2', async (args, message) => {
    const err = new PassThrough();
    let errText = '';
    err.on('data', (d: Buffer) => (errText += d.toString()));
    expect(await validatorMain(args, { stdout: new PassThrough(), stderr: err })).toBe(2);
    expect(errText).toMatch(message);
  });

  it('parses IPv6 addresses in brackets', () => {
    expect(parseHostPort('x', '[2001:db8::2]:20001')).toEqual({ host: '2001:db8::2', port: 20001 });
  });

  it('names the namespace the DaemonSet is in', () => {
    const msg = notRedirectedMessage(
      { connectAddr: { host: '192.0.2.2', port: 20001 }, listenPort: 4140, timeoutMs: 1, cniNamespace: 'mesh' },
      'connect failed: EHOSTUNREACH',
      undefined,
    );
    expect(msg).toContain('kubectl -n mesh get daemonset minimesh-cni');
    expect(msg).not.toContain(' on node ');
  });
});
