// An "outside host" for egress tests: a network namespace of the test's own at 203.0.113.10 (TEST-NET-3,
// RFC 5737: an address that exists only inside the test's namespaces), joined by a veth pair to a
// gateway namespace (the node's, where pods route through) at 203.0.113.1, outside every cluster
// network. It runs a Node script (an app the test gives) and keeps what it logs, so a test can say what
// reached it. Traffic to it never leaves the namespaces: nothing is routed to any other address.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const OUTSIDE_IP = '203.0.113.10';
export const OUTSIDE_GATEWAY_IP = '203.0.113.1';

export interface OutsideHostOptions {
  /** The namespace the outside host is joined to (it routes the pods' traffic: the node's). */
  gatewayNetns: string;
  /** A short tag (at most 6 characters) naming the namespace and the veth pair, unique per test. */
  tag: string;
  /** The host's app: a CommonJS Node script; it must print a line containing `listening` once it serves. */
  app: string;
  /** Arguments of the app (process.argv[2] on). */
  args?: readonly string[];
  /** How long to wait for `listening` (default 10 s). */
  readyMs?: number;
}

export interface OutsideHost {
  readonly ip: string;
  readonly netns: string;
  /** What the app printed so far. */
  log(): string;
  /** Stops the app and deletes the namespace (the gateway's end of the veth goes with it). */
  remove(): void;
}

function ip(args: readonly string[], allowFail = false): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0 && !allowFail)
    throw new Error(`outside host: ip ${args.join(' ')} failed (${r.status}): ${(r.stderr || r.stdout).trim()}`);
}

/** Makes the outside host and waits until its app listens. Needs root. */
export async function createOutsideHost(o: OutsideHostOptions): Promise<OutsideHost> {
  if (!/^[a-z0-9]{1,6}$/.test(o.tag))
    throw new Error(`outside host: tag "${o.tag}" must be 1-6 lowercase letters or digits (it names interfaces)`);
  const netns = `mm-outside-${o.tag}`;
  const [gw, out] = [`mmo${o.tag}g`, `mmo${o.tag}o`];
  const dir = mkdtempSync(join(tmpdir(), 'mm-outside-'));
  let output = '';
  let child: ChildProcess | undefined;
  const host: OutsideHost = {
    ip: OUTSIDE_IP,
    netns,
    log: () => output,
    remove() {
      child?.kill('SIGKILL');
      // The veth pair goes with either end; deleting it here does not wait for the namespace to be
      // freed (it lives on while the killed app is not yet reaped).
      ip(['-n', o.gatewayNetns, 'link', 'del', gw], true);
      ip(['netns', 'del', netns], true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    ip(['netns', 'add', netns]);
    ip(['-n', netns, 'link', 'set', 'lo', 'up']);
    ip(['link', 'add', gw, 'netns', o.gatewayNetns, 'type', 'veth', 'peer', 'name', out, 'netns', netns]);
    ip(['-n', o.gatewayNetns, 'addr', 'add', `${OUTSIDE_GATEWAY_IP}/24`, 'dev', gw]);
    ip(['-n', o.gatewayNetns, 'link', 'set', gw, 'up']);
    ip(['-n', netns, 'addr', 'add', `${OUTSIDE_IP}/24`, 'dev', out]);
    ip(['-n', netns, 'link', 'set', out, 'up']);
    ip(['-n', netns, 'route', 'add', 'default', 'via', OUTSIDE_GATEWAY_IP]);
    const r = spawnSync('ip', ['netns', 'exec', o.gatewayNetns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    if (r.status !== 0) throw new Error(`outside host: ip_forward in ${o.gatewayNetns}: ${String(r.stderr).trim()}`);
    const app = join(dir, 'outside-app.cjs');
    writeFileSync(app, o.app);
    child = spawn('ip', ['netns', 'exec', netns, process.execPath, app, ...(o.args ?? [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const readyMs = o.readyMs ?? 10_000;
    const start = Date.now();
    while (!output.includes('listening')) {
      if (child.exitCode !== null)
        throw new Error(`outside host: its app exited (${child.exitCode}): ${output.trim()}`);
      if (Date.now() - start > readyMs)
        throw new Error(`outside host: its app did not listen within ${readyMs} ms: ${output.trim()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return host;
  } catch (err) {
    host.remove();
    throw err;
  }
}
