// The installer against directories laid out as a node's (a temp dir as the host root): it copies
// the plugin, writes its kubeconfig from the service account, chains itself into the conflist the
// runtime reads, gets back in when the cluster's CNI rewrites that file (the watch), serves /ready
// and /status, and on SIGTERM leaves the conflist byte for byte as it found it.
import { EventEmitter } from 'node:events';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  existsSync,
  readdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { installerProgram } from '../src/index.js';

const CONFLIST = `${JSON.stringify(
  {
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    plugins: [
      { type: 'bridge', bridge: 'cni0', ipam: { type: 'host-local' } },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  },
  null,
  2,
)}\n`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, f: () => T | undefined | false, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

let root = '';
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

function layout() {
  root = mkdtempSync(join(tmpdir(), 'mm-cni-inst-'));
  const host = join(root, 'host');
  mkdirSync(join(host, 'opt/cni/bin'), { recursive: true });
  mkdirSync(join(host, 'etc/cni/net.d'), { recursive: true });
  writeFileSync(join(host, 'etc/cni/net.d/10-k8s.conflist'), CONFLIST, { mode: 0o644 });
  const sa = join(root, 'sa');
  mkdirSync(sa);
  writeFileSync(join(sa, 'token'), 'token-1\n');
  writeFileSync(join(sa, 'ca.crt'), '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n');
  const plugin = join(root, 'minimesh-cni');
  writeFileSync(plugin, '#!/bin/sh\necho plugin\n');
  return { host, sa, plugin, conflist: join(host, 'etc/cni/net.d/10-k8s.conflist') };
}

describe('minimesh-cni-installer', () => {
  it('installs, stays chained when the conflist is rewritten, and uninstalls cleanly on SIGTERM', async () => {
    const l = layout();
    const signals = new EventEmitter();
    const out = new PassThrough();
    let log = '';
    out.on('data', (d: Buffer) => (log += d.toString()));
    const done = installerProgram().main(
      [
        '--host-root',
        l.host,
        '--plugin',
        l.plugin,
        '--service-account-dir',
        l.sa,
        '--api-server',
        'https://10.96.0.1:443',
        '--admin-addr',
        '127.0.0.1:0',
        '--resync',
        '60s',
        '--node-name',
        'node-a',
      ],
      { stdout: out, stderr: out, signals },
    );
    const chained = () =>
      (JSON.parse(readFileSync(l.conflist, 'utf8')) as { plugins: { type: string }[] }).plugins.map((p) => p.type);
    await until('chained', () => chained().at(-1) === 'minimesh-cni');
    expect(chained()).toEqual(['bridge', 'portmap', 'minimesh-cni']);
    const entry = (JSON.parse(readFileSync(l.conflist, 'utf8')) as { plugins: Record<string, unknown>[] }).plugins.at(
      -1,
    );
    expect(entry).toEqual({
      type: 'minimesh-cni',
      log_level: 'info',
      state_dir: '/var/run/minimesh-cni',
      kubernetes: { kubeconfig: '/etc/cni/net.d/minimesh-cni-kubeconfig' },
    });
    // The plugin, executable; the kubeconfig, readable by root only, with the service account's token.
    const bin = join(l.host, 'opt/cni/bin/minimesh-cni');
    expect(readFileSync(bin, 'utf8')).toBe(readFileSync(l.plugin, 'utf8'));
    expect(statSync(bin).mode & 0o777).toBe(0o755);
    const kc = join(l.host, 'etc/cni/net.d/minimesh-cni-kubeconfig');
    expect(statSync(kc).mode & 0o777).toBe(0o600);
    const kubeconfig = JSON.parse(readFileSync(kc, 'utf8')) as {
      clusters: { cluster: { server: string } }[];
      users: { user: { token: string } }[];
    };
    expect(kubeconfig.clusters[0]?.cluster.server).toBe('https://10.96.0.1:443');
    expect(kubeconfig.users[0]?.user.token).toBe('token-1');
    expect(statSync(l.conflist).mode & 0o777).toBe(0o644);

    // The cluster's CNI writes its file again (as a CNI daemon does on restart): the watch puts us back.
    writeFileSync(l.conflist, CONFLIST);
    await until('chained again after the rewrite', () => chained().at(-1) === 'minimesh-cni').catch((err: Error) => {
      throw new Error(`${err.message}\n${log}`);
    });
    expect(log).toMatch(/chained minimesh-cni into \/etc\/cni\/net\.d\/10-k8s\.conflist/);

    signals.emit('SIGTERM');
    expect(await done).toBe(0);
    expect(readFileSync(l.conflist, 'utf8')).toBe(CONFLIST);
    expect(existsSync(bin)).toBe(false);
    expect(existsSync(kc)).toBe(false);
    expect(readdirSync(join(l.host, 'etc/cni/net.d'))).toEqual(['10-k8s.conflist']);
    expect(log).toMatch(/removed minimesh-cni from \/etc\/cni\/net\.d\/10-k8s\.conflist/);
  });

  it('is not ready, and says why, until the cluster’s CNI has written a conflist', async () => {
    const l = layout();
    rmSync(l.conflist);
    const { createInstaller } = await import('../src/index.js');
    const { createLogger } = await import('@minimesh/runtime');
    const inst = createInstaller(
      {
        hostRoot: l.host,
        binDir: '/opt/cni/bin',
        confDir: '/etc/cni/net.d',
        stateDir: '/var/run/minimesh-cni',
        pluginSource: l.plugin,
        pluginLogLevel: 'info',
        apiServer: 'https://10.96.0.1:443',
        serviceAccountDir: l.sa,
        nodeName: 'node-a',
      },
      createLogger({ name: 't', level: 'silent' }),
    );
    await inst.sync();
    expect(inst.status()).toMatchObject({
      ready: false,
      chained: false,
      reason: expect.stringMatching(/^no CNI configuration in \/etc\/cni\/net\.d yet/),
    });
    writeFileSync(l.conflist, CONFLIST);
    writeFileSync(join(l.sa, 'token'), 'token-2\n');
    const changes = await inst.sync();
    expect(changes).toEqual([
      'refreshed /etc/cni/net.d/minimesh-cni-kubeconfig (token rotated)',
      'chained minimesh-cni into /etc/cni/net.d/10-k8s.conflist',
    ]);
    expect(inst.status()).toMatchObject({ ready: true, chained: true, confFile: '/etc/cni/net.d/10-k8s.conflist' });
    expect(await inst.sync()).toEqual([]);
    await inst.uninstall();
    expect(readFileSync(l.conflist, 'utf8')).toBe(CONFLIST);
  });
});
