// Start-up refusals, through the built binary: exit code and the one stderr line naming file and problem.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBinary, runBinaryEnv } from './helpers/binary.js';
import { makeRoot, makeTutorialPki, makeSigned } from './helpers/openssl-pki.js';

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mm-id-startup-'));
  makeTutorialPki(dir);
  makeRoot(dir, 'other-root', 'someone-else.example');
  makeSigned(dir, {
    name: 'stranger',
    ca: 'other-root',
    cn: 'identity.minimesh.cluster.local',
    profile: 'intermediate-ca',
  });
  makeSigned(dir, { name: 'leafish', ca: 'ca', cn: 'not-a-ca.minimesh.cluster.local', profile: 'leaf' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function issuerDir(
  name: string,
  cert: string,
  key: string,
  scheme: 'minimesh.io/tls' | 'kubernetes.io/tls' = 'minimesh.io/tls',
): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  const [c, k] = scheme === 'minimesh.io/tls' ? ['crt.pem', 'key.pem'] : ['tls.crt', 'tls.key'];
  copyFileSync(join(dir, cert), join(d, c));
  copyFileSync(join(dir, key), join(d, k));
  return d;
}

const baseArgs = (d: string): string[] => [
  '--issuer-dir',
  d,
  '--trust-anchors',
  join(dir, 'ca.crt'),
  '--addr',
  '127.0.0.1:0',
  '--admin-addr',
  '127.0.0.1:0',
];
const run = (d: string, extra: string[] = []) => runBinary([...baseArgs(d), ...extra]);

describe('minimesh-identity start-up', () => {
  it.each([
    [
      'is not a CA',
      'leafish.crt',
      'leafish.key',
      (d: string) =>
        `minimesh-identity: ${d}/crt.pem: issuer "CN=not-a-ca.minimesh.cluster.local" is not a CA: basicConstraints says CA:FALSE`,
    ],
    [
      'does not chain to the trust anchors',
      'stranger.crt',
      'stranger.key',
      (d: string) =>
        `minimesh-identity: ${d}/crt.pem: issuer "CN=identity.minimesh.cluster.local" does not chain to the trust anchors (CN=root.minimesh.cluster.local)`,
    ],
    [
      'has a key that does not match',
      'issuer.crt',
      'stranger.key',
      (d: string) =>
        `minimesh-identity: ${d}/key.pem: private key does not match the issuer certificate in ${d}/crt.pem`,
    ],
  ])('refuses an issuer that %s (exit 1, one line naming the file)', async (name, cert, key, line) => {
    const d = issuerDir(name.replace(/ /g, '-'), cert, key);
    const r = await run(d);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`${line(d)}\n`);
  });

  it('refuses a missing issuer file for the chosen scheme, naming it', async () => {
    const d = issuerDir('k8s-scheme', 'issuer.crt', 'issuer.key', 'kubernetes.io/tls');
    const r = await run(d);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(`^minimesh-identity: ${d}/(crt|key)\\.pem: cannot read the issuer (certificate|key) \\(ENOENT\\)\\n$`),
    );
  });

  it('refuses trust anchors that hold no certificate', async () => {
    writeFileSync(join(dir, 'empty.pem'), 'nothing here\n');
    const r = await runBinary([
      '--issuer-dir',
      issuerDir('ok', 'issuer.crt', 'issuer.key'),
      '--trust-anchors',
      join(dir, 'empty.pem'),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`minimesh-identity: ${join(dir, 'empty.pem')}: holds no PEM certificate\n`);
  });

  it('refuses to start without a kubeconfig outside a cluster, and with an unreadable one, naming it', async () => {
    const ok = issuerDir('ok-kube', 'issuer.crt', 'issuer.key');
    // Nothing to find: no flag, no $KUBECONFIG, not in a pod, no ~/.kube/config (HOME is a fresh directory).
    const home = mkdtempSync(join(tmpdir(), 'mm-id-home-'));
    const outside = await runBinaryEnv([...baseArgs(ok)], { KUBERNETES_SERVICE_HOST: '', KUBECONFIG: '', HOME: home });
    expect(outside.code).toBe(2);
    expect(outside.stderr).toBe(
      `minimesh-identity: no Kubernetes configuration found: tried --kubeconfig, $KUBECONFIG, in-cluster ($KUBERNETES_SERVICE_HOST is unset), ${home}/.kube/config\n`,
    );
    const nope = join(dir, 'nope.kubeconfig');
    const missing = await runBinaryEnv([...baseArgs(ok), '--kubeconfig', nope], {});
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(`minimesh-identity: --kubeconfig ${nope}: cannot read ${nope} (ENOENT)\n`);
  });

  it.each([
    [
      ['--issuer-scheme', 'linkerd.io/tls'],
      'minimesh-identity: --issuer-scheme: "linkerd.io/tls" is not valid: expected minimesh.io/tls or kubernetes.io/tls',
    ],
    [
      ['--issuance-lifetime', 'forever'],
      'minimesh-identity: --issuance-lifetime: "forever" is not valid: expected a duration such as 20s, 24h or 1h30m (units ms, s, m, h)',
    ],
    [
      ['--addr', 'everywhere'],
      'minimesh-identity: --addr: "everywhere" is not valid: expected host:port such as 0.0.0.0:8080, 127.0.0.1:4140 or [::]:4143',
    ],
    [
      ['--certify-workers', 'many'],
      'minimesh-identity: --certify-workers: "many" is not valid: expected auto or a whole number from 0 (no worker threads) to 16',
    ],
    [
      ['--certify-workers', '17'],
      'minimesh-identity: --certify-workers: "17" is not valid: expected auto or a whole number from 0 (no worker threads) to 16',
    ],
    [
      ['--listen-backlog', '0'],
      'minimesh-identity: --listen-backlog: "0" is not valid: expected a whole number from 1 to 65535',
    ],
    [['--log-level', 'loud'], /^minimesh-identity: --log-level: "loud" is not valid/],
    [['--no-such-flag'], /^minimesh-identity: .*Unknown option '--no-such-flag'/],
  ])('exits 2 with one line on bad flags: %j', async (args, message) => {
    const r = await runBinary(args);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    if (typeof message === 'string') expect(r.stderr).toBe(`${message}\n`);
    else expect(r.stderr).toMatch(message);
  });

  it('prints help', async () => {
    const r = await runBinary(['--help']);
    expect(r.code).toBe(0);
    for (const flag of [
      '--addr',
      '--admin-addr',
      '--issuer-dir',
      '--issuer-scheme',
      '--trust-anchors',
      '--trust-domain',
      '--controller-namespace',
      '--issuance-lifetime',
      '--clock-skew-allowance',
      '--token-audience',
      '--certify-concurrency',
      '--certify-workers',
      '--listen-backlog',
      '--kubeconfig',
      '--log-level',
      '--log-format',
    ]) {
      expect(r.stdout).toContain(flag);
    }
  });
});
