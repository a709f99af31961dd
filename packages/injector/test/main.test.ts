// The built minimesh-injector binary: --help, and bad input exits 2 with one line naming the problem.
import { spawnSync } from 'node:child_process';
import { writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { here } from './helpers.js';
import { makeTestCert } from '@minimesh/test-support/tls';
import { tempDir } from './tls.js';

const bin = join(here, '..', 'dist', 'main.js');
const dir = tempDir('mm-inj-main-');
const tls = makeTestCert({ dir, cn: 'main' });
const badConfig = join(dir, 'bad.yaml');
writeFileSync(badConfig, 'proxy:\n  uid: "root"\n');
const notYaml = join(dir, 'not.yaml');
writeFileSync(notYaml, 'proxy: [\n');
// A kubeconfig whose server refuses connections: the watch keeps retrying, which must not keep a
// process that failed to start alive.
const kubeconfig = join(dir, 'kubeconfig');
writeFileSync(
  kubeconfig,
  `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
);
const busy = createServer().listen(0, '127.0.0.1');
let busyPort = 0;
beforeAll(async () => {
  if (!busy.listening) await new Promise((r) => busy.once('listening', r));
  busyPort = (busy.address() as { port: number }).port;
});
afterAll(() => {
  busy.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = (args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 20_000 });

describe('minimesh-injector', () => {
  it('--help lists every flag of the issue', () => {
    const r = run(['--help']);
    expect(r.status).toBe(0);
    for (const flag of [
      '--addr',
      '--admin-addr',
      '--tls-cert',
      '--tls-key',
      '--config',
      '--kubeconfig',
      '--log-level',
      '--log-format',
    ]) {
      expect(r.stdout).toContain(flag);
    }
    expect(r.stdout).toContain('0.0.0.0:8443');
    expect(r.stdout).toContain('0.0.0.0:9995');
  });

  it.each([
    [[], /--tls-cert and --tls-key are required/],
    [['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--addr', 'nowhere'], /--addr: "nowhere" is not valid/],
    [['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--log-level', 'loud'], /--log-level: "loud" is not valid/],
    [
      ['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--config', badConfig],
      /config .*bad\.yaml: proxy\.uid: "root" is not valid: expected number/,
    ],
    [['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--config', notYaml], /not valid JSON or YAML/],
    [['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--config', join(dir, 'missing.yaml')], /cannot read it/],
    [
      ['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--kubeconfig', join(dir, 'missing.kubeconfig')],
      /--kubeconfig .*missing\.kubeconfig: cannot read .*missing\.kubeconfig \(ENOENT\)/,
    ],
    [['--tls-cert', tls.certFile, '--tls-key', join(dir, 'missing.key')], /TLS certificate .* \/ key .*missing\.key/],
    [['--bogus'], /bogus/],
  ])('exits 2 for %j', (args, message) => {
    const r = run(args);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 2, and does not linger, when a listen address is taken', () => {
    const common = ['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--kubeconfig', kubeconfig];
    const admin = run([...common, '--admin-addr', `127.0.0.1:${busyPort}`, '--addr', '127.0.0.1:0']);
    expect(admin.status).toBe(2);
    expect(admin.stderr).toMatch(/--admin-addr 127\.0\.0\.1:\d+: cannot listen: .*EADDRINUSE/);
    const webhook = run([...common, '--admin-addr', '127.0.0.1:0', '--addr', `127.0.0.1:${busyPort}`]);
    expect(webhook.status).toBe(2);
    expect(webhook.stderr).toMatch(/--addr 127\.0\.0\.1:\d+: cannot listen: .*EADDRINUSE/);
  });
});
