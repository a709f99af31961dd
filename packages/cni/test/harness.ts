// The CNI harness for the plugin's tests: the reference cnitool (containernetworking/cni, built by
// scripts/go-tool.sh from the Go module proxy) runs a conflist of Debian's bridge + host-local and
// minimesh-cni, as a container runtime does, inside a throw-away "node" network namespace, against
// throw-away "pod" namespaces. Every namespace is named mm-cni-<random>-* and deleted by destroy().
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  readdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PKG_DIR = fileURLToPath(new URL('..', import.meta.url));
export const REPO_DIR = fileURLToPath(new URL('../../..', import.meta.url));
const SEA = join(PKG_DIR, 'sea', 'minimesh-cni');
const POD_API = fileURLToPath(new URL('./fixtures/pod-api.mjs', import.meta.url));
export const VALIDATOR = join(REPO_DIR, 'packages', 'proxy-init', 'dist', 'network-validator.js');
const SUBNET = '10.233.7';

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(argv: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Result> {
  return new Promise((resolve) => {
    const [cmd, ...args] = argv as [string, ...string[]];
    const child = spawn(cmd, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: opts.env ?? process.env,
      timeout: opts.timeoutMs ?? 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => resolve({ code: 127, stdout, stderr: stderr + err.message }));
    child.on('close', (code) => resolve({ code: code ?? 128, stdout, stderr }));
  });
}

async function must(argv: string[]): Promise<string> {
  const r = await run(argv);
  if (r.code !== 0) throw new Error(`${argv.join(' ')} exited with ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/** The single-executable plugin, built once per change of dist/ (scripts/build-sea.mjs). */
export function ensureSea(): string {
  const dist = join(PKG_DIR, 'dist');
  const newest = Math.max(
    ...readdirSync(join(dist, 'plugin')).map((f) => statSync(join(dist, 'plugin', f)).mtimeMs),
    statSync(join(dist, 'plugin-main.js')).mtimeMs,
  );
  if (!existsSync(SEA) || statSync(SEA).mtimeMs < newest)
    execFileSync(process.execPath, [join(PKG_DIR, 'scripts', 'build-sea.mjs')], { stdio: 'inherit' });
  return SEA;
}

export function cnitoolPath(): string {
  return execFileSync('bash', [join(REPO_DIR, 'scripts', 'go-tool.sh'), 'cnitool'], { encoding: 'utf8' }).trim();
}

/** The sandbox id cnitool gives the pod in that namespace: "cnitool-" and 20 hex digits of sha512(path). */
export function containerIdOf(netns: string): string {
  return `cnitool-${createHash('sha512').update(netns).digest('hex').slice(0, 20)}`;
}

export interface Harness {
  id: string;
  node: string;
  dir: string;
  stateDir: string;
  /** Adds a pod the stand-in API answers for. */
  setPod(namespace: string, name: string, pod: unknown): void;
  /** A fresh pod network namespace; its path. */
  podNetns(): Promise<string>;
  /** cnitool add|check|del for the pod in that namespace. */
  cnitool(command: 'add' | 'check' | 'del', netns: string, pod: { namespace: string; name: string }): Promise<Result>;
  /** Runs argv inside the namespace at that path. */
  exec(netns: string, argv: string[]): Promise<Result>;
  /** proxy-init's network validator in the namespace, as an unprivileged uid (65534), as in a pod. */
  validate(netns: string, timeout: string): Promise<Result>;
  destroy(): Promise<void>;
}

export async function createHarness(): Promise<Harness> {
  const cnitool = cnitoolPath();
  const sea = ensureSea();
  const id = randomBytes(3).toString('hex');
  const node = `mm-cni-${id}-node`;
  const dir = mkdtempSync(join(tmpdir(), 'mm-cni-'));
  const binDir = join(dir, 'bin');
  const confDir = join(dir, 'net.d');
  const stateDir = join(dir, 'state');
  const podsFile = join(dir, 'pods.json');
  const varLib = join(dir, 'var-lib');
  for (const d of [binDir, confDir, stateDir, varLib]) mkdirSync(d);
  for (const p of ['bridge', 'host-local', 'loopback']) symlinkSync(`/usr/lib/cni/${p}`, join(binDir, p));
  copyFileSync(sea, join(binDir, 'minimesh-cni'));
  const pods: Record<string, unknown> = {};
  writeFileSync(podsFile, '{}');
  const port = 20000 + Math.floor(Math.random() * 20000);
  writeFileSync(
    join(dir, 'kubeconfig'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: `http://127.0.0.1:${port}` } }],
      users: [{ name: 'u', user: { token: 'test' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  writeFileSync(
    join(confDir, '10-mmtest.conflist'),
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'mmtest',
      plugins: [
        {
          type: 'bridge',
          bridge: `mmc${id}`,
          isGateway: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: `${SUBNET}.0/24`, gateway: `${SUBNET}.1` }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: join(dir, 'ipam'),
          },
        },
        {
          type: 'minimesh-cni',
          log_level: 'debug',
          state_dir: stateDir,
          kubernetes: { kubeconfig: join(dir, 'kubeconfig') },
        },
      ],
    }),
  );
  const netnses: string[] = [];
  let api: ChildProcess | undefined;
  const h: Harness = {
    id,
    node,
    dir,
    stateDir,
    setPod(namespace, name, pod) {
      pods[`${namespace}/${name}`] = pod;
      writeFileSync(podsFile, JSON.stringify(pods));
    },
    async podNetns() {
      const name = `mm-cni-${id}-p${netnses.length}`;
      await must(['ip', 'netns', 'add', name]);
      // The runtime brings the pod's loopback up (its own loopback plugin), as here.
      await must(['ip', '-n', name, 'link', 'set', 'lo', 'up']);
      netnses.push(name);
      return `/var/run/netns/${name}`;
    },
    cnitool(command, netns, pod) {
      // cnitool keeps its results cache in /var/lib/cni (libcni's default; cnitool has no flag for it):
      // it runs in a mount namespace of its own where /var/lib is this harness's directory, so nothing
      // is written on the host and the cache lives as long as the harness (add, then check and del).
      const argv = ['ip', 'netns', 'exec', node, cnitool, command, 'mmtest', netns];
      const mountThenRun = 'mount --bind "$0" /var/lib && exec "$@"';
      return run(['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', mountThenRun, varLib, ...argv], {
        env: {
          ...process.env,
          NETCONFPATH: confDir,
          CNI_PATH: binDir,
          CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name}`,
        },
      });
    },
    exec: (netns, argv) => run(['nsenter', `--net=${netns}`, '--', ...argv]),
    validate: (netns, timeout) =>
      h.exec(netns, [
        'setpriv',
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        process.execPath,
        VALIDATOR,
        '--timeout',
        timeout,
      ]),
    async destroy() {
      api?.kill();
      for (const n of [...netnses, node]) await run(['ip', 'netns', 'del', n]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await must(['ip', 'netns', 'add', node]);
    await must(['ip', '-n', node, 'link', 'set', 'lo', 'up']);
    api = spawn('ip', ['netns', 'exec', node, process.execPath, POD_API, String(port), podsFile], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    for await (const chunk of api.stdout as NodeJS.ReadableStream) {
      out += String(chunk);
      if (out.includes('listening')) break;
    }
    if (!out.includes('listening')) throw new Error('the stand-in API server did not start');
  } catch (err) {
    await h.destroy();
    throw err;
  }
  return h;
}
