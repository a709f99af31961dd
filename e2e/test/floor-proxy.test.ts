// The floor pair of the proxy bench (bench/proxy/floor-proxy.mjs, run by bench/proxy/floor.ts): it must
// carry the bench's requests the way a mesh does, or its memory would be the floor of something else.
// HTTP/1.1 in, HTTP/2 over mutual TLS between the two sides, HTTP/1.1 to the app; the inbound side
// refuses a client without a certificate it trusts. Loopback only.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestCert } from '@minimesh/test-support/tls';
import { waitLine } from '../../bench/proxy/wait-line.js';
import { repoRoot } from '../src/tools.js';

const bench = join(repoRoot, 'bench/proxy');
const dir = mkdtempSync(join(tmpdir(), 'mm-floor-test-'));
const children: ChildProcess[] = [];
const ports: Record<string, number> = {};

/** A self-signed P-256 certificate in the test's directory: <name>.crt and <name>.key. */
function cert(name: string) {
  const c = makeTestCert({ dir, name, cn: name });
  return { cert: c.certFile, key: c.keyFile };
}

/** Starts `node <argv>` and resolves with the port from its "port <n>" line. */
async function start(argv: string[]): Promise<number> {
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return Number((await waitLine(child, 'port ', 10_000)).slice(5));
}

function get(port: number, path: string): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, headers: { host: 'bench-floor:80' } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    })
      .on('error', reject)
      .end();
  });
}

beforeAll(async () => {
  const out = cert('outbound');
  const inb = cert('inbound');
  cert('stranger');
  ports.app = await start([join(bench, 'server.mjs'), '127.0.0.1', '0']);
  const proxy = join(bench, 'floor-proxy.mjs');
  ports.inbound = await start([proxy, 'inbound', '0', String(ports.app), inb.cert, inb.key, out.cert]);
  ports.outbound = await start([proxy, 'outbound', '0', String(ports.inbound), out.cert, out.key, inb.cert]);
});

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('the floor pair of the proxy bench', () => {
  it('carries requests client → outbound → HTTP/2 over mutual TLS → inbound → app', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => get(ports.outbound!, '/bench')));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.body).toBe('hello from the benchmark server\n');
      expect(a.headers['content-type']).toBe('text/plain');
    }
    // The app's answers the route variants use travel through too (503 once, then 200).
    expect((await get(ports.outbound!, '/flaky/floor-test')).status).toBe(503);
    expect((await get(ports.outbound!, '/flaky/floor-test')).status).toBe(200);
  });

  it('answers 502 when the outbound side cannot reach the inbound side', async () => {
    const outboundOnly = await start([
      join(bench, 'floor-proxy.mjs'),
      'outbound',
      '0',
      '1',
      join(dir, 'outbound.crt'),
      join(dir, 'outbound.key'),
      join(dir, 'inbound.crt'),
    ]);
    expect((await get(outboundOnly, '/bench')).status).toBe(502);
  });

  it('the inbound side refuses a client whose certificate it does not trust, and serves one it does', async () => {
    // Once it accepts a client, an HTTP/2 server sends its SETTINGS at once: data means "open".
    const attempt = (name: string) =>
      new Promise<string>((resolve) => {
        const s = connect({
          host: '127.0.0.1',
          port: ports.inbound!,
          ALPNProtocols: ['h2'],
          servername: 'localhost',
          ca: readFileSync(join(dir, 'inbound.crt')),
          cert: readFileSync(join(dir, `${name}.crt`)),
          key: readFileSync(join(dir, `${name}.key`)),
        });
        s.on('data', () => {
          resolve('open');
          s.destroy();
        });
        s.on('error', (err) => resolve(`refused: ${err.message}`));
        s.on('close', () => resolve('closed'));
      });
    expect(await attempt('stranger')).toMatch(/^(refused|closed)/);
    expect(await attempt('outbound')).toBe('open');
  });

  it('says how to call it when the arguments are wrong', () => {
    const r = spawnSync(process.execPath, [join(bench, 'floor-proxy.mjs'), 'sideways'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('usage: floor-proxy.mjs outbound|inbound');
  });
});
