// Network namespaces for the integration tests: a "pod" and a "peer", joined by a veth pair, with
// private addresses that exist only inside them. Everything is named mm-pi-<random> and deleted by destroy().
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const PKG_DIR = fileURLToPath(new URL('..', import.meta.url));
export const REPO_DIR = fileURLToPath(new URL('../../..', import.meta.url));
export const BIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const LISTENER = fileURLToPath(new URL('./fixtures/listener.mjs', import.meta.url));
const CLIENT = fileURLToPath(new URL('./fixtures/client.mjs', import.meta.url));

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; never rejects (the result says how it went). Bounded by timeoutMs. */
export function run(argv: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<Result> {
  return new Promise((resolve) => {
    const [cmd, ...args] = argv as [string, ...string[]];
    const child = spawn(cmd, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: opts.timeoutMs ?? 30_000,
      env: opts.env ?? process.env,
      cwd: REPO_DIR,
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

export interface Pair {
  pod: string;
  peer: string;
  podIp: string;
  peerIp: string;
  podIp6: string;
  peerIp6: string;
  /** Runs argv inside a namespace. */
  exec(ns: string, argv: string[], opts?: { env?: NodeJS.ProcessEnv }): Promise<Result>;
  /** Runs the built proxy-init inside the pod namespace. */
  proxyInit(args: string[]): Promise<Result>;
  /** Starts a test listener inside a namespace; resolves once it listens. */
  listen(ns: string, addrs: string[]): Promise<void>;
  /** Connects from inside a namespace (optionally as another uid) and returns the server's answer. */
  connect(ns: string, host: string, port: number, opts?: { uid?: number }): Promise<Record<string, unknown>>;
  save(ns: string, cmd: string): Promise<string>;
  destroy(): Promise<void>;
}

export async function createPair(): Promise<Pair> {
  if (!existsSync(BIN))
    throw new Error(`${BIN} is missing: build proxy-init first (npx tsc -p tsconfig.build.json, or npm run build)`);
  const id = randomBytes(3).toString('hex');
  const pod = `mm-pi-${id}-pod`;
  const peer = `mm-pi-${id}-peer`;
  const children: ChildProcess[] = [];
  const pair: Pair = {
    pod,
    peer,
    podIp: '10.231.0.1',
    peerIp: '10.231.0.2',
    podIp6: 'fd6d:6d00::1',
    peerIp6: 'fd6d:6d00::2',
    exec: (ns, argv, opts) => run(['ip', 'netns', 'exec', ns, ...argv], opts ?? {}),
    proxyInit: (args) => run(['ip', 'netns', 'exec', pod, process.execPath, BIN, ...args]),
    async listen(ns, addrs) {
      const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '--import', 'tsx', LISTENER, ...addrs], {
        cwd: REPO_DIR,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      const timer = setTimeout(() => child.kill(), 20_000);
      let out = '';
      for await (const chunk of child.stdout) {
        out += String(chunk);
        if (out.includes('ready')) break;
      }
      clearTimeout(timer);
      if (!out.includes('ready')) throw new Error(`listener in ${ns} on ${addrs.join(' ')} did not start`);
    },
    async connect(ns, host, port, opts = {}) {
      const asUser =
        opts.uid === undefined ? [] : ['setpriv', `--reuid=${opts.uid}`, `--regid=${opts.uid}`, '--clear-groups'];
      const r = await pair.exec(ns, [...asUser, process.execPath, CLIENT, host, String(port)]);
      if (r.code !== 0) throw new Error(`client exited with ${r.code}: ${r.stderr}`);
      return JSON.parse(r.stdout.trim()) as Record<string, unknown>;
    },
    save: (ns, cmd) => must(['ip', 'netns', 'exec', ns, cmd, '-t', 'nat']),
    async destroy() {
      for (const child of children) {
        if (child.exitCode === null) {
          child.kill();
          await Promise.race([once(child, 'exit'), new Promise((r) => setTimeout(r, 2000))]);
        }
      }
      await run(['ip', 'netns', 'del', pod]);
      await run(['ip', 'netns', 'del', peer]);
    },
  };
  try {
    await must(['ip', 'netns', 'add', pod]);
    await must(['ip', 'netns', 'add', peer]);
    await must([
      'ip',
      'link',
      'add',
      `mm-pi-${id}a`,
      'netns',
      pod,
      'type',
      'veth',
      'peer',
      'name',
      `mm-pi-${id}b`,
      'netns',
      peer,
    ]);
    for (const [ns, dev, ip, ip6] of [
      [pod, `mm-pi-${id}a`, pair.podIp, pair.podIp6],
      [peer, `mm-pi-${id}b`, pair.peerIp, pair.peerIp6],
    ] as const) {
      await must(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
      await must(['ip', '-n', ns, 'addr', 'add', `${ip}/24`, 'dev', dev]);
      await must(['ip', '-n', ns, '-6', 'addr', 'add', `${ip6}/64`, 'dev', dev, 'nodad']);
      await must(['ip', '-n', ns, 'link', 'set', dev, 'up']);
    }
  } catch (err) {
    await pair.destroy();
    throw err;
  }
  return pair;
}

/** Rule and chain lines of an iptables-save, without comments and counters (for comparing two saves). */
/** A fresh network namespace's nat table, as normalizeSave prints it. */
export const EMPTY_NAT = [
  '*nat',
  ':PREROUTING ACCEPT [0:0]',
  ':INPUT ACCEPT [0:0]',
  ':OUTPUT ACCEPT [0:0]',
  ':POSTROUTING ACCEPT [0:0]',
  'COMMIT',
].join('\n');

export function normalizeSave(text: string): string {
  return text
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.replace(/\[\d+:\d+\]$/, '[0:0]'))
    .join('\n');
}

/** The "-A <chain> ..." lines of one chain, in order. */
export function chainLines(save: string, chain: string): string[] {
  return save.split('\n').filter((l) => l.startsWith(`-A ${chain} `));
}
