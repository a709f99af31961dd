// The program's edges: start-up errors, /ready as a latch, /shutdown, and the TLS control-plane channel.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { identity } from '@minimesh/proto';
import { Registry } from 'prom-client';
import { createLogger } from '@minimesh/runtime';
import { createTestPki } from './support/pki.js';
import { FakeIdentity, startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { proxyEnv, removeTempDirs, startHarnessProxy, tempDir } from './support/harness.js';
import { CertifyClient } from '../src/identity/certify-client.js';
import { ProxyMetrics } from '../src/metrics/metrics.js';
import { TlsCredentials } from '../src/tls/credentials.js';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  removeTempDirs();
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

describe('minimesh-proxy program', () => {
  it('without the SO_ORIGINAL_DST addon it does not start: one error naming the addon, not a ready proxy', () => {
    const env = proxyEnv({
      identity: ID,
      anchorPem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
      controlAddr: '127.0.0.1:1',
      env: { MINIMESH_ORIGINAL_DST_ADDON: '/nonexistent/original_dst.node', MINIMESH_PROXY_LOG: 'error' },
    });
    const r = spawnSync(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, ...env },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).not.toBe(0);
    expect(r.status).not.toBeNull();
    expect(`${r.stdout}${r.stderr}`).toContain(
      'the SO_ORIGINAL_DST addon could not be loaded from /nonexistent/original_dst.node',
    );
  });

  it('a missing setting stops start-up with one line naming it, exit 2', () => {
    const r = spawnSync(process.execPath, [MAIN], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^minimesh-proxy: MINIMESH_PROXY_IDENTITY_LOCAL_NAME: "" is not valid: expected/);
  });

  it('SIGTERM drains: in-flight requests finish, new connections are refused, exit 0', async () => {
    const pki = await createTestPki();
    const cp = await startFakeControlPlane(pki);
    cleanups.push(() => cp.close());
    const { createServer: createHttp } = await import('node:http');
    const slow = createHttp((_req, res) => setTimeout(() => res.end('slow done'), 700));
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => slow.close());
    const slowPort = (slow.address() as { port: number }).port;
    cp.destination.set('slow.default.svc.cluster.local:80', [{ ip: '127.0.0.1', port: slowPort }]);
    const [admin, outbound] = [await freePort(), await freePort()];
    const env = {
      ...proxyEnv({ identity: ID, anchorPem: pki.anchorPem, controlAddr: cp.addr }),
      MINIMESH_PROXY_ADMIN_LISTEN_ADDR: `127.0.0.1:${admin}`,
      MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: `127.0.0.1:${outbound}`,
      MINIMESH_PROXY_SHUTDOWN_GRACE_PERIOD: '5s',
      PATH: process.env.PATH ?? '',
    };
    const child = spawn(process.execPath, [MAIN], { env, stdio: 'ignore' });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    for (let i = 0; i < 100; i++) {
      const ok = await fetch(`http://127.0.0.1:${admin}/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const { request: httpRequest } = await import('node:http');
    const inflight = new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: outbound, path: '/', headers: { host: 'slow.default.svc.cluster.local' } },
        (res) => {
          let b = '';
          res.on('data', (c: Buffer) => (b += c.toString()));
          res.on('end', () => resolve(b));
        },
      );
      req.on('error', reject);
      req.end();
    });
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 150));
    const { connect: netConnect } = await import('node:net');
    const refused = await new Promise<string>((resolve) => {
      const s = netConnect(outbound, '127.0.0.1');
      s.on('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
    expect(await inflight).toBe('slow done');
    expect(await exited).toBe(0);
  });

  it('--help prints the summary', () => {
    const r = spawnSync(process.execPath, [MAIN, '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('MINIMESH_PROXY_IDENTITY_LOCAL_NAME');
  });
});

describe('admin', () => {
  it('/ready is 503 until the first certificate, then stays 200 while identity is down (a latch)', async () => {
    const pki = await createTestPki();
    const port = await freePort();
    const proxy = await startHarnessProxy({ identity: ID, anchorPem: pki.anchorPem, controlAddr: `127.0.0.1:${port}` });
    cleanups.push(() => proxy.shutdown(50));
    const ready = async () => (await fetch(`http://127.0.0.1:${proxy.ports.admin}/ready`)).status;
    expect(await ready()).toBe(503);
    await new Promise((r) => setTimeout(r, 300));
    expect(await ready()).toBe(503);
    const cp: FakeControlPlane = await startFakeControlPlane(pki, { bind: `127.0.0.1:${port}` });
    for (let i = 0; i < 100 && (await ready()) !== 200; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await ready()).toBe(200);
    cp.server.forceShutdown();
    await new Promise((r) => setTimeout(r, 200));
    expect(await ready()).toBe(200);
    expect((await fetch(`http://127.0.0.1:${proxy.ports.admin}/live`)).status).toBe(200);
    expect(await (await fetch(`http://127.0.0.1:${proxy.ports.admin}/metrics`)).text()).toMatch(
      /control_identity_cert_expiration_timestamp_seconds \d+/,
    );
  });

  it('POST /shutdown from localhost stops the proxy when enabled; 404 when not', async () => {
    const pki = await createTestPki();
    const cp = await startFakeControlPlane(pki);
    cleanups.push(() => cp.close());
    const off = await startHarnessProxy({ identity: ID, anchorPem: pki.anchorPem, controlAddr: cp.addr });
    cleanups.push(() => off.shutdown(50));
    expect((await fetch(`http://127.0.0.1:${off.ports.admin}/shutdown`, { method: 'POST' })).status).toBe(404);
    const on = await startHarnessProxy({
      identity: ID,
      anchorPem: pki.anchorPem,
      controlAddr: cp.addr,
      env: { MINIMESH_PROXY_SHUTDOWN_ENDPOINT_ENABLED: 'true', MINIMESH_PROXY_SHUTDOWN_GRACE_PERIOD: '100ms' },
    });
    expect((await fetch(`http://127.0.0.1:${on.ports.admin}/shutdown`)).status).toBe(405);
    expect((await fetch(`http://127.0.0.1:${on.ports.admin}/shutdown`, { method: 'POST' })).status).toBe(202);
    let closed = false;
    for (let i = 0; i < 30 && !closed; i++) {
      await new Promise((r) => setTimeout(r, 100));
      closed = await fetch(`http://127.0.0.1:${on.ports.admin}/live`).then(
        () => false,
        () => true,
      );
    }
    expect(closed).toBe(true);
  });
});

describe('control plane over TLS', () => {
  it('dials identity with TLS verifying its name; without a client certificate at bootstrap', async () => {
    const pki = await createTestPki();
    const idName = 'minimesh-identity.minimesh.serviceaccount.identity.minimesh.cluster.local';
    const serverLeaf = await pki.leaf(idName);
    const fake = new FakeIdentity(pki);
    const server = new Server();
    server.addService(identity.IdentityService, fake.implementation());
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(
        '127.0.0.1:0',
        ServerCredentials.createSsl(
          Buffer.from(pki.anchorPem),
          [{ private_key: Buffer.from(serverLeaf.keyPem), cert_chain: Buffer.from(serverLeaf.certPem) }],
          false,
        ),
        (e, p) => (e ? reject(e) : resolve(p)),
      ),
    );
    cleanups.push(() => server.forceShutdown());
    const dir = tempDir();
    writeFileSync(join(dir, 'token'), 'tok');
    const logger = createLogger({ name: 't', level: 'silent' });
    const certify = (name: string) => {
      const creds = new TlsCredentials(ID, pki.anchorPem);
      const c = new CertifyClient({
        addr: { addr: `127.0.0.1:${port}`, name, plaintext: false },
        localIdentity: ID,
        tokenFile: join(dir, 'token'),
        tls: creds,
        metrics: new ProxyMetrics(new Registry()),
        logger,
        callTimeoutMs: 2000,
        schedule: { backoffBaseMs: 100_000 },
      });
      return { c, creds };
    };
    const good = certify(idName);
    await good.c.start();
    expect(good.creds.certificate).toBeDefined();
    good.c.stop();
    const wrong = certify('someone-else.minimesh.serviceaccount.identity.minimesh.cluster.local');
    const before = fake.calls;
    void wrong.c.start();
    await new Promise((r) => setTimeout(r, 1500));
    expect(wrong.creds.certificate).toBeUndefined();
    expect(fake.calls).toBe(before);
    wrong.c.stop();
  });
});
