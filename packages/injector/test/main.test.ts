// The built minimesh-injector binary: --help, and bad input exits 2 with one line naming the problem.
import { spawnSync } from 'node:child_process';
import { writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { here } from './helpers.js';
import { makeCert, tempDir } from './tls.js';

const bin = join(here, '..', 'dist', 'main.js');
const dir = tempDir('mm-inj-main-');
const tls = makeCert(dir, 'main');
const badConfig = join(dir, 'bad.yaml');
writeFileSync(badConfig, 'proxy:\n  uid: "root"\n');
const notYaml = join(dir, 'not.yaml');
writeFileSync(notYaml, 'proxy: [\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 20_000 });

describe('minimesh-injector', () => {
  it('--help lists every flag of the issue', () => {
    const r = run(['--help']);
    expect(r.status).toBe(0);
    for (const flag of ['--addr', '--admin-addr', '--tls-cert', '--tls-key', '--config', '--kubeconfig', '--log-level', '--log-format']) {
      expect(r.stdout).toContain(flag);
    }
    expect(r.stdout).toContain('0.0.0.0:8443');
    expect(r.stdout).toContain('0.0.0.0:9995');
  });

  it.each([
    [[], /--tls-cert and --tls-key are required/],
    [['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--addr', 'nowhere'], /--addr: "nowhere" is not valid/],
    [['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--log-level', 'loud'], /--log-level: "loud" is not valid/],
    [['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--config', badConfig], /config .*bad\.yaml: proxy\.uid: "root" is not valid: expected number/],
    [['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--config', notYaml], /not valid JSON or YAML/],
    [['--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--config', join(dir, 'missing.yaml')], /cannot read it/],
    [['--bogus'], /bogus/],
  ])('exits 2 for %j', (args, message) => {
    const r = run(args);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
